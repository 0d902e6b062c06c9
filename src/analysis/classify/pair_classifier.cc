#include "analysis/classify/pair_classifier.h"

#include <algorithm>
#include <map>

#include "analysis/jobs/union_find.h"

namespace prism::analysis {

size_t CountDistinctSizes(std::vector<uint64_t> sizes, double tolerance) {
  if (sizes.empty()) return 0;
  std::sort(sizes.begin(), sizes.end());
  size_t distinct = 1;
  uint64_t anchor = sizes[0];
  for (size_t i = 1; i < sizes.size(); ++i) {
    if (double(sizes[i]) > double(anchor) * (1 + tolerance)) {
      ++distinct;
      anchor = sizes[i];
    }
  }
  return distinct;
}

Pair ClassifyPair(const GpuPair& gpus, const PairTransfers& pt,
                  const PairClassifierOptions& options) {
  Pair pair;
  pair.a = gpus.a;
  pair.b = gpus.b;
  pair.job = gpus.job;
  PairEvidence& ev = pair.evidence;
  ev.records = pt.data_records;
  ev.control_records = pt.control_records;
  ev.transfers = static_cast<uint32_t>(pt.transfers.size());
  uint64_t bytes_ab = 0, bytes_ba = 0;
  for (const Transfer& t : pt.transfers) (t.from_a ? bytes_ab : bytes_ba) += t.bytes;
  ev.bytes_from_a = bytes_ab;
  ev.bytes_from_b = bytes_ba;
  const uint64_t total = bytes_ab + bytes_ba;
  ev.bidirectional = total > 0 && std::min(bytes_ab, bytes_ba) >= options.one_way_fraction * total;
  if (pt.transfers.empty()) {
    ev.rule = "no-data";
    return pair;
  }
  // A micro-batch's gradient cannot come back before its activation went out, so the forward
  // direction leads the running count of transfers.
  int64_t running = 0;
  double lead_sum = 0;
  for (const Transfer& t : pt.transfers) {
    running += t.from_a ? 1 : -1;
    lead_sum += double(running);
  }
  ev.lead_a = lead_sum / double(pt.transfers.size());
  std::vector<int64_t> starts, ends;
  for (const Transfer& t : pt.transfers) {
    starts.push_back(t.start_ns);
    ends.push_back(t.end_ns);
  }
  const auto steps = SegmentSteps(starts, ends, options.steps);
  ev.steps = static_cast<uint32_t>(steps.size());
  // Sizes that are rare in the window are not the pair's sizes: a transfer cut by the window edge,
  // one that lost a record (one of its QPs), a retransmission. A size counts when at least 5% of
  // the pair's transfers (and two) have it: a ring's buckets each recur every step, a pipeline's
  // one size is nearly all of them.
  std::vector<uint64_t> all_sizes;
  for (const Transfer& t : pt.transfers) all_sizes.push_back(t.bytes);
  std::sort(all_sizes.begin(), all_sizes.end());
  const long min_count = std::max<long>(2, long(all_sizes.size()) / 20);
  auto recurring = [&](uint64_t size) {
    auto lo = std::lower_bound(all_sizes.begin(), all_sizes.end(),
                               uint64_t(double(size) / (1 + options.size_tolerance)));
    auto hi = std::upper_bound(all_sizes.begin(), all_sizes.end(),
                               uint64_t(double(size) * (1 + options.size_tolerance)));
    return hi - lo >= min_count;
  };
  std::map<size_t, size_t> histogram;  // distinct sizes -> steps
  std::vector<uint32_t> from_a, from_b;
  for (const Activity& s : steps) {
    std::vector<uint64_t> sizes;
    uint32_t na = 0, nb = 0;
    for (size_t i = s.first; i <= s.last; ++i) {
      if (recurring(pt.transfers[i].bytes)) sizes.push_back(pt.transfers[i].bytes);
      (pt.transfers[i].from_a ? na : nb)++;
    }
    from_a.push_back(na);
    from_b.push_back(nb);
    if (!sizes.empty()) ++histogram[CountDistinctSizes(std::move(sizes), options.size_tolerance)];
  }
  auto median = [](std::vector<uint32_t> v) -> uint32_t {
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  ev.per_step_from_a = median(from_a);
  ev.per_step_from_b = median(from_b);
  size_t mode = 0, best = 0;
  for (auto [count, n] : histogram)
    if (n > best) best = n, mode = count;  // ties: the smaller count, as the map is ordered
  ev.sizes_mode = static_cast<uint32_t>(mode);
  pair.label = mode <= 1 ? PairLabel::kPp : PairLabel::kDp;
  ev.rule = "distinct-sizes";
  return pair;
}

size_t RefinePairs(std::vector<Pair>* pairs, size_t num_endpoints) {
  size_t changed = 0;
  // Pipelines send activations one way and gradients the other: one-way data is a ring edge.
  for (Pair& p : *pairs) {
    if (p.label == PairLabel::kPp && !p.evidence.bidirectional && p.evidence.transfers >= 4) {
      p.label = PairLabel::kDp;
      p.evidence.rule = "one-way-data";
      ++changed;
    }
  }
  // DP groups are transitive. A pair with balanced data both ways keeps its label: that is what a
  // pipeline pair looks like, and one wrong DP label must not pull a pipeline into a ring.
  UnionFind uf(num_endpoints);
  for (const Pair& p : *pairs)
    if (p.label == PairLabel::kDp) uf.Union(p.a, p.b);
  for (Pair& p : *pairs) {
    const uint64_t lo = std::min(p.evidence.bytes_from_a, p.evidence.bytes_from_b);
    const uint64_t hi = std::max(p.evidence.bytes_from_a, p.evidence.bytes_from_b);
    const bool balanced = lo * 2 >= hi && lo > 0;
    if (p.label == PairLabel::kPp && !balanced && uf.Find(p.a) == uf.Find(p.b)) {
      p.label = PairLabel::kDp;
      p.evidence.rule = "dp-transitive";
      ++changed;
    }
  }
  return changed;
}

}  // namespace prism::analysis
