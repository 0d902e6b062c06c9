#include "analysis/classify/pair_classifier.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "analysis/classify/step_order.h"
#include "analysis/jobs/union_find.h"

namespace prism::analysis {
namespace {

std::vector<int64_t> StepEnds(const std::vector<Activity>& steps) {
  std::vector<int64_t> ends;
  for (const Activity& s : steps) ends.push_back(s.end_ns);
  return ends;
}

// Working vectors of one thread's ClassifyPair calls, kept from pair to pair (cleared, capacity
// reused). Classification runs once per pair on the analysis threads, and vectors made per pair
// and per step were most of its allocations: paper seed 1 made 1.1 million for 41,524 pairs.
// With the process on one malloc arena (analyze --threads) the threads queue on its lock.
struct PairScratch {
  std::vector<int64_t> starts, ends;             // the transfers' times, for SegmentSteps
  std::vector<uint64_t> all_sizes, step_sizes;   // MeasureStepSizes
  std::vector<uint64_t> distinct_sizes;          // MeasureStepSizes: all_sizes without repeats
  std::vector<uint8_t> distinct_recurs;          // MeasureStepSizes: per distinct size
  std::vector<uint32_t> from_a, from_b;          // MeasureStepSizes, per step
  std::vector<size_t> steps_with_distinct;       // MeasureStepSizes: steps per distinct count
  std::vector<int64_t> direction_starts[2];      // AlignedStartShare
};

PairScratch& ThreadPairScratch() {
  thread_local PairScratch scratch;
  return scratch;
}

// CountDistinctSizes on `sizes`, which it sorts.
size_t CountDistinctSizesInPlace(std::vector<uint64_t>& sizes, double tolerance) {
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

// AlignedStartShare with the two directions' starts kept in `starts`.
double AlignedStartShareWith(std::span<const Transfer> transfers, int64_t tolerance_ns,
                             std::vector<int64_t> (&starts)[2]) {
  starts[0].clear();
  starts[1].clear();
  for (const Transfer& t : transfers) starts[t.from_a ? 0 : 1].push_back(t.start_ns);
  if (starts[0].empty() || starts[1].empty()) return 0;
  // Transfers are in start order, so each list is sorted: for each start, the nearest start of
  // the other direction is found by walking a cursor.
  size_t aligned = 0;
  for (int d : {0, 1}) {
    const std::vector<int64_t>& mine = starts[d];
    const std::vector<int64_t>& other = starts[1 - d];
    size_t j = 0;
    for (int64_t s : mine) {
      while (j + 1 < other.size() && other[j + 1] <= s) ++j;
      const int64_t before = std::abs(s - other[j]);
      const int64_t after = j + 1 < other.size() ? std::abs(other[j + 1] - s) : INT64_MAX;
      if (std::min(before, after) <= tolerance_ns) ++aligned;
    }
  }
  return double(aligned) / double(starts[0].size() + starts[1].size());
}

}  // namespace

size_t CountDistinctSizes(std::vector<uint64_t> sizes, double tolerance) {
  return CountDistinctSizesInPlace(sizes, tolerance);
}

double AlignedStartShare(std::span<const Transfer> transfers, int64_t tolerance_ns) {
  std::vector<int64_t> starts[2];
  return AlignedStartShareWith(transfers, tolerance_ns, starts);
}

StepOrder MeasureStepOrder(std::span<const Transfer> transfers, std::span<const Activity> steps) {
  StepOrder out;
  // Whether transfer k overlaps a transfer of the other direction within [first, last].
  auto alone = [&](size_t k, size_t first, size_t last) {
    const Transfer& t = transfers[k];
    for (size_t j = first; j <= last && transfers[j].start_ns < t.end_ns; ++j)
      if (transfers[j].from_a != t.from_a && transfers[j].end_ns > t.start_ns) return false;
    return true;
  };
  for (const Activity& s : steps) {
    bool ways[2] = {false, false};
    size_t closing = s.first;
    for (size_t k = s.first; k <= s.last; ++k) {
      ways[transfers[k].from_a ? 0 : 1] = true;
      if (transfers[k].end_ns >= transfers[closing].end_ns) closing = k;
    }
    if (!ways[0] || !ways[1]) continue;
    ++out.both_way_steps;
    const size_t opening = s.first;
    if (transfers[opening].from_a == transfers[closing].from_a) continue;
    if (!alone(opening, s.first, s.last) || !alone(closing, s.first, s.last)) continue;
    ++out.ordered_steps;
    out.ordered_from_a += transfers[opening].from_a ? 1 : -1;
  }
  return out;
}

namespace {

// Per step, how many transfers go each way (their medians) and how many distinct recurring sizes
// the step has (their mode), into `ev`.
void MeasureStepSizes(const std::vector<Transfer>& transfers, const std::vector<Activity>& steps,
                      const PairClassifierOptions& options, PairScratch& scratch,
                      PairEvidence* ev) {
  // Sizes that are rare in the window are not the pair's sizes: a transfer cut by the window edge,
  // one that lost a record (one of its QPs), a retransmission. A size counts when at least 5% of
  // the pair's transfers (and two) have it: a ring's buckets each recur every step, a pipeline's
  // one size is nearly all of them.
  std::vector<uint64_t>& all_sizes = scratch.all_sizes;
  all_sizes.clear();
  for (const Transfer& t : transfers) all_sizes.push_back(t.bytes);
  std::sort(all_sizes.begin(), all_sizes.end());
  const long min_count = std::max<long>(2, long(all_sizes.size()) / 20);
  // Whether each distinct size recurs, in one sweep of the sorted sizes: the bounds of a size's
  // tolerance rise with it, so the first size within them and the first above move only forward.
  // (Searched for per transfer, two binary searches of all the sizes were most of this function.)
  std::vector<uint64_t>& distinct = scratch.distinct_sizes;
  std::vector<uint8_t>& recurs = scratch.distinct_recurs;
  distinct.clear();
  recurs.clear();
  size_t lo = 0, hi = 0;
  for (size_t i = 0; i < all_sizes.size(); ++i) {
    const uint64_t size = all_sizes[i];
    if (i > 0 && size == all_sizes[i - 1]) continue;
    const uint64_t low = uint64_t(double(size) / (1 + options.size_tolerance));
    const uint64_t high = uint64_t(double(size) * (1 + options.size_tolerance));
    while (lo < all_sizes.size() && all_sizes[lo] < low) ++lo;
    while (hi < all_sizes.size() && all_sizes[hi] <= high) ++hi;
    distinct.push_back(size);
    recurs.push_back(long(hi - lo) >= min_count);
  }
  // A transfer's size is most often its predecessor's (one bucket size per burst).
  uint64_t last_size = 0;
  bool last_recurs = false, looked_up = false;
  auto recurring = [&](uint64_t size) {
    if (!looked_up || size != last_size) {
      last_size = size;
      last_recurs = recurs[size_t(std::lower_bound(distinct.begin(), distinct.end(), size) -
                                  distinct.begin())];
      looked_up = true;
    }
    return last_recurs;
  };
  std::vector<size_t>& histogram = scratch.steps_with_distinct;  // [distinct sizes] -> steps
  histogram.clear();
  std::vector<uint32_t>& from_a = scratch.from_a;
  std::vector<uint32_t>& from_b = scratch.from_b;
  from_a.clear();
  from_b.clear();
  std::vector<uint64_t>& sizes = scratch.step_sizes;
  for (const Activity& s : steps) {
    sizes.clear();
    uint32_t na = 0, nb = 0;
    for (size_t i = s.first; i <= s.last; ++i) {
      if (recurring(transfers[i].bytes)) sizes.push_back(transfers[i].bytes);
      (transfers[i].from_a ? na : nb)++;
    }
    from_a.push_back(na);
    from_b.push_back(nb);
    if (sizes.empty()) continue;
    const size_t distinct = CountDistinctSizesInPlace(sizes, options.size_tolerance);
    if (histogram.size() <= distinct) histogram.resize(distinct + 1, 0);
    ++histogram[distinct];
  }
  auto median = [](std::vector<uint32_t>& v) -> uint32_t {  // reorders v
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  ev->per_step_from_a = median(from_a);
  ev->per_step_from_b = median(from_b);
  size_t mode = 0, best = 0;
  for (size_t count = 0; count < histogram.size(); ++count)
    if (histogram[count] > best) best = histogram[count], mode = count;  // ties: the smaller count
  ev->sizes_mode = static_cast<uint32_t>(mode);
}

// The label, by the rules, strongest first; `ev->rule` names the rule that decided.
void ApplyRules(size_t transfers, const std::vector<Activity>& steps, const StepOrder& order,
                const PairClassifierOptions& options, Pair* pair) {
  PairEvidence& ev = pair->evidence;
  const uint32_t mode = ev.sizes_mode;
  // The rules, strongest first. A collective moves data one way along each ring edge, or both
  // ways at once (a ring of two, a tree, a bidirectional ring): then each burst one way starts
  // with one the other way (how long they then overlap depends on the network, not the job). A pipeline sends activations one
  // way and gradients back, one micro-batch at a time: its directions take turns, each step
  // opening with the forward direction alone and closing with the backward direction alone. These
  // look at bursts and their timing, not at how many records or which sizes, so they hold whatever
  // the record granularity. The paper's distinct-size rule decides only pairs with too few
  // transfers to tell.
  const uint32_t consistent = uint32_t(std::abs(order.ordered_from_a));
  if (transfers < options.min_transfers_for_direction) {
    pair->label = mode <= 1 ? PairLabel::kPp : PairLabel::kDp;
    ev.rule = "distinct-sizes";
  } else if (!ev.bidirectional) {
    pair->label = PairLabel::kDp;
    ev.rule = "one-way-data";
  } else if (order.both_way_steps >= options.min_steps_for_order &&
             double(consistent) >= options.min_ordered_share * order.both_way_steps) {
    pair->label = PairLabel::kPp;
    ev.rule = "ordered-directions";
  } else if (ev.aligned_starts >= options.min_aligned_share) {
    pair->label = PairLabel::kDp;
    ev.rule = "aligned-directions";
  } else if (order.both_way_steps >= options.min_steps_for_unordered &&
             double(order.both_way_steps) >= options.min_both_way_share * double(steps.size()) &&
             (double(order.ordered_steps) <= options.max_unordered_share * order.both_way_steps ||
              double(consistent) <= options.max_unordered_net_share * order.both_way_steps) &&
             PeriodIrregularity(StepEnds(steps)) <= options.max_own_irregularity) {
    pair->label = PairLabel::kDp;
    ev.rule = "unordered-directions";
  } else {
    pair->label = PairLabel::kPp;
    ev.rule = "alternating-directions";
  }
}

}  // namespace

Pair ClassifyPair(const GpuPair& gpus, const PairTransfers& pt,
                  const PairClassifierOptions& options, uint64_t* bocd_points) {
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
  PairScratch& scratch = ThreadPairScratch();
  std::vector<int64_t>& starts = scratch.starts;
  std::vector<int64_t>& ends = scratch.ends;
  starts.clear();
  ends.clear();
  for (const Transfer& t : pt.transfers) {
    starts.push_back(t.start_ns);
    ends.push_back(t.end_ns);
  }
  const auto steps = SegmentSteps(starts, ends, options.steps, nullptr, bocd_points);
  ev.steps = static_cast<uint32_t>(steps.size());
  MeasureStepSizes(pt.transfers, steps, options, scratch, &ev);
  ev.aligned_starts = AlignedStartShareWith(pt.transfers, options.align_ns, scratch.direction_starts);
  const StepOrder order = MeasureStepOrder(pt.transfers, steps);
  ev.both_way_steps = order.both_way_steps;
  ev.ordered_steps = order.ordered_steps;
  ApplyRules(pt.transfers.size(), steps, order, options, &pair);
  return pair;
}

size_t UnlabelSporadicPairs(std::vector<Pair>* pairs, double min_step_share) {
  std::map<int, std::vector<uint32_t>> steps_of_job;
  for (const Pair& p : *pairs)
    if (p.job >= 0 && p.label != PairLabel::kUnknown) steps_of_job[p.job].push_back(p.evidence.steps);
  std::map<int, double> typical;
  for (auto& [job, steps] : steps_of_job) {
    if (steps.size() < 3) continue;
    std::nth_element(steps.begin(), steps.begin() + long(steps.size() / 2), steps.end());
    typical[job] = steps[steps.size() / 2];
  }
  size_t changed = 0;
  for (Pair& p : *pairs) {
    const auto it = typical.find(p.job);
    if (it == typical.end() || p.label == PairLabel::kUnknown) continue;
    if (double(p.evidence.steps) >= min_step_share * it->second) continue;
    p.label = PairLabel::kUnknown;
    p.evidence.rule = "sporadic";
    ++changed;
  }
  return changed;
}

size_t RefinePairs(std::vector<Pair>* pairs, size_t num_endpoints) {
  size_t changed = 0;
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
