#include "diagnosis/rules/fabric_contribution_split.h"

#include <algorithm>

namespace prism::diagnosis {
namespace {

// Where one part's names are numbered: an index of c's (endpoint, job, leaf, point) in the part,
// -1 until the part refers to it.
struct PartNumbers {
  std::vector<int32_t> endpoint, job, leaf, point;
};

// Numbers the part's names in c's order (the order a shard's own contribution would give them)
// and copies them in.
void CopyNames(const FabricContribution& c, PartNumbers& n, FabricContribution& part) {
  for (size_t e = 0; e < c.endpoint_addr.size(); ++e) {
    if (n.endpoint[e] < 0) continue;
    if (c.endpoint_job[e] >= 0) n.job[size_t(c.endpoint_job[e])] = 0;
    if (c.endpoint_leaf[e] >= 0) n.leaf[size_t(c.endpoint_leaf[e])] = 0;
  }
  auto renumber = [](std::vector<int32_t>& index_of, const auto& names, auto& out) {
    uint32_t next = 0;
    for (size_t i = 0; i < index_of.size(); ++i) {
      if (index_of[i] < 0) continue;
      index_of[i] = int32_t(next++);
      out.push_back(names[i]);
    }
  };
  // Endpoints were marked (any value >= 0) while the records and pairs were dealt.
  renumber(n.endpoint, c.endpoint_addr, part.endpoint_addr);
  renumber(n.job, c.jobs, part.jobs);
  renumber(n.leaf, c.leaf_names, part.leaf_names);
  renumber(n.point, c.points, part.points);
  for (size_t e = 0; e < c.endpoint_addr.size(); ++e) {
    if (n.endpoint[e] < 0) continue;
    const int32_t job = c.endpoint_job[e], leaf = c.endpoint_leaf[e];
    part.endpoint_job.push_back(job < 0 ? -1 : n.job[size_t(job)]);
    part.endpoint_leaf.push_back(leaf < 0 ? -1 : n.leaf[size_t(leaf)]);
  }
}

}  // namespace

std::vector<FabricContribution> SplitFabricContribution(const FabricContribution& c,
                                                        std::span<const int32_t> endpoint_part,
                                                        size_t parts) {
  std::vector<FabricContribution> out(std::max<size_t>(parts, 1));
  std::vector<PartNumbers> numbers(out.size());
  for (PartNumbers& n : numbers) {
    n.endpoint.assign(c.endpoint_addr.size(), -1);
    n.job.assign(c.jobs.size(), -1);
    n.leaf.assign(c.leaf_names.size(), -1);
    n.point.assign(c.points.size(), -1);
  }
  auto part_of = [&](uint32_t a, uint32_t b) -> size_t {
    const int32_t pa = a < endpoint_part.size() ? endpoint_part[a] : -1;
    const int32_t pb = b < endpoint_part.size() ? endpoint_part[b] : -1;
    const int32_t p = pa >= 0 ? pa : pb;
    return p >= 0 && size_t(p) < out.size() ? size_t(p) : 0;
  };
  // First pass: which part each record and pair goes to, and which names each part refers to.
  std::vector<uint32_t> record_part(c.records());
  for (size_t r = 0; r < c.records(); ++r) {
    const size_t p = part_of(c.src[r], c.dst[r]);
    record_part[r] = uint32_t(p);
    numbers[p].endpoint[c.src[r]] = 0;
    numbers[p].endpoint[c.dst[r]] = 0;
    if (c.point[r] != kNoPoint) numbers[p].point[c.point[r]] = 0;
  }
  std::vector<uint32_t> pair_part(c.pairs.size());
  for (size_t i = 0; i < c.pairs.size(); ++i) {
    const size_t p = part_of(c.pairs[i].a, c.pairs[i].b);
    pair_part[i] = uint32_t(p);
    numbers[p].endpoint[c.pairs[i].a] = 0;
    numbers[p].endpoint[c.pairs[i].b] = 0;
  }
  for (size_t p = 0; p < out.size(); ++p) {
    out[p].first_start_ns = c.first_start_ns;
    out[p].last_start_ns = c.last_start_ns;
    CopyNames(c, numbers[p], out[p]);
  }
  // Second pass: the records, in c's order (by start), and the pairs, renumbered.
  for (size_t r = 0; r < c.records(); ++r) {
    FabricContribution& part = out[record_part[r]];
    const PartNumbers& n = numbers[record_part[r]];
    part.start_ns.push_back(c.start_ns[r]);
    part.end_ns.push_back(c.end_ns[r]);
    part.bytes.push_back(c.bytes[r]);
    part.src.push_back(uint32_t(n.endpoint[c.src[r]]));
    part.dst.push_back(uint32_t(n.endpoint[c.dst[r]]));
    part.point.push_back(c.point[r] == kNoPoint ? kNoPoint : uint32_t(n.point[c.point[r]]));
  }
  for (size_t i = 0; i < c.pairs.size(); ++i) {
    const PartNumbers& n = numbers[pair_part[i]];
    out[pair_part[i]].pairs.push_back({uint32_t(n.endpoint[c.pairs[i].a]),
                                       uint32_t(n.endpoint[c.pairs[i].b]), c.pairs[i].label});
  }
  return out;
}

}  // namespace prism::diagnosis
