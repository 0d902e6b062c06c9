#include "diagnosis/rules/fabric_contribution.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>

#include "diagnosis/rules/bandwidth_cells.h"

namespace prism::diagnosis {
namespace {

// Dense indices for names (or addresses) in the order they are first asked for.
template <typename Key, typename Map = std::map<Key, uint32_t>>
class Numbering {
 public:
  explicit Numbering(std::vector<Key>* names) : names_(*names) {}
  uint32_t Of(const Key& k) {
    auto [it, inserted] = index_.try_emplace(k, uint32_t(names_.size()));
    if (inserted) names_.push_back(k);
    return it->second;
  }

 private:
  std::vector<Key>& names_;
  Map index_;
};

using AddrNumbering = Numbering<IpAddr, std::unordered_map<IpAddr, uint32_t, IpAddrHash>>;

// The rule reads a record at all only when it carries data (the bandwidth rule's and the pace's
// control test) and both its ends are in one job: RecordClasses::ComputeClass and Paced.
bool ReadByTheRule(const RuleContext& rc, size_t r) {
  const auto& f = rc.flows;
  if (f.Bytes(r) <= kBandwidthControlMaxBytes || f.EndNs(r) <= f.start_ns()[r]) return false;
  const int job = rc.results.job_of[f.src()[r]];
  return job >= 0 && job == rc.results.job_of[f.dst()[r]];
}

}  // namespace

FabricContribution BuildFabricContribution(const RuleContext& rc) {
  FabricContribution c;
  const auto& f = rc.flows;
  for (const auto& job : rc.results.jobs) c.jobs.push_back(job.id);
  if (f.empty()) return c;
  c.first_start_ns = f.min_start_ns();
  c.last_start_ns = f.LatestStartNs();
  std::vector<int32_t> endpoint_of(f.endpoints().size(), -1);  // window id -> contribution's
  std::vector<int32_t> leaf_of(rc.ctx.leaf_names.size(), -1);
  Numbering<std::string> points(&c.points);
  auto endpoint = [&](EndpointId e) {
    int32_t& i = endpoint_of[e];
    if (i >= 0) return uint32_t(i);
    i = int32_t(c.endpoint_addr.size());
    c.endpoint_addr.push_back(f.endpoints().Addr(e));
    c.endpoint_job.push_back(rc.results.job_of[e]);
    const int leaf = rc.ctx.leaf[e];
    if (leaf >= 0 && leaf_of[size_t(leaf)] < 0) {
      leaf_of[size_t(leaf)] = int32_t(c.leaf_names.size());
      c.leaf_names.push_back(rc.ctx.leaf_names[size_t(leaf)]);
    }
    c.endpoint_leaf.push_back(leaf < 0 ? -1 : leaf_of[size_t(leaf)]);
    return uint32_t(i);
  };
  for (size_t r = 0; r < f.size(); ++r) {
    if (!ReadByTheRule(rc, r)) continue;
    c.start_ns.push_back(f.start_ns()[r]);
    c.end_ns.push_back(f.EndNs(r));
    c.bytes.push_back(f.EstimatedBytes(r));
    c.src.push_back(endpoint(f.src()[r]));
    c.dst.push_back(endpoint(f.dst()[r]));
    const PointId p = f.point()[r];
    c.point.push_back(p == kNoPoint ? kNoPoint : points.Of(rc.points.Name(p)));
  }
  // Pairs of unknown label judge no record, as pairs not listed: left out.
  for (const auto& p : rc.results.pairs) {
    if (p.label == analysis::PairLabel::kUnknown) continue;
    if (endpoint_of[p.a] < 0 || endpoint_of[p.b] < 0) continue;
    c.pairs.push_back({uint32_t(endpoint_of[p.a]), uint32_t(endpoint_of[p.b]), p.label});
  }
  return c;
}

namespace {

// Where the rows of the merged contribution come from: (part, row), by (start, end), ties in
// the order of the parts (the order a window sorted by start keeps them in, but for records of
// one start and end on two shards).
std::vector<std::pair<uint32_t, uint32_t>> MergedRowOrder(
    std::span<const FabricContribution> parts) {
  std::vector<std::pair<uint32_t, uint32_t>> order;
  for (size_t p = 0; p < parts.size(); ++p)
    for (size_t r = 0; r < parts[p].records(); ++r) order.emplace_back(uint32_t(p), uint32_t(r));
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
    const FabricContribution &a = parts[x.first], &b = parts[y.first];
    return std::pair(a.start_ns[x.second], a.end_ns[x.second]) <
           std::pair(b.start_ns[y.second], b.end_ns[y.second]);
  });
  return order;
}

}  // namespace

FabricContribution MergeFabricContributions(std::span<const FabricContribution> parts) {
  FabricContribution out;
  Numbering<std::string> leaves(&out.leaf_names), points(&out.points);
  AddrNumbering endpoints(&out.endpoint_addr);
  // Per part: its endpoint and point indices in the merged contribution.
  std::vector<std::vector<uint32_t>> endpoint_of(parts.size()), point_of(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    const FabricContribution& c = parts[p];
    out.first_start_ns = std::min(out.first_start_ns, c.first_start_ns);
    out.last_start_ns = std::max(out.last_start_ns, c.last_start_ns);
    const int32_t job_base = int32_t(out.jobs.size());
    out.jobs.insert(out.jobs.end(), c.jobs.begin(), c.jobs.end());
    for (size_t e = 0; e < c.endpoint_addr.size(); ++e) {
      const uint32_t i = endpoints.Of(c.endpoint_addr[e]);
      endpoint_of[p].push_back(i);
      if (i < out.endpoint_job.size()) continue;  // seen in an earlier part: its job kept
      out.endpoint_job.push_back(c.endpoint_job[e] < 0 ? -1 : job_base + c.endpoint_job[e]);
      const int32_t leaf = c.endpoint_leaf[e];
      out.endpoint_leaf.push_back(leaf < 0 ? -1 : int32_t(leaves.Of(c.leaf_names[size_t(leaf)])));
    }
    for (const std::string& name : c.points) point_of[p].push_back(points.Of(name));
    for (const auto& pair : c.pairs)
      out.pairs.push_back({endpoint_of[p][pair.a], endpoint_of[p][pair.b], pair.label});
  }
  for (const auto& [p, r] : MergedRowOrder(parts)) {
    const FabricContribution& c = parts[p];
    out.start_ns.push_back(c.start_ns[r]);
    out.end_ns.push_back(c.end_ns[r]);
    out.bytes.push_back(c.bytes[r]);
    out.src.push_back(endpoint_of[p][c.src[r]]);
    out.dst.push_back(endpoint_of[p][c.dst[r]]);
    out.point.push_back(c.point[r] == kNoPoint ? kNoPoint : point_of[p][c.point[r]]);
  }
  return out;
}

}  // namespace prism::diagnosis
