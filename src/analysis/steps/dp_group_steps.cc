#include "analysis/steps/dp_group_steps.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/jobs/union_find.h"
#include "analysis/parallel_for.h"

namespace prism::analysis {
namespace {

// The median of `v` (reordered), 0 when empty.
uint32_t MedianU32(std::vector<uint32_t>& v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

std::vector<Activity> MergeAlternatingSteps(const std::vector<Activity>& acts,
                                            double min_step_gap_ratio) {
  if (acts.size() < 4) return acts;
  std::vector<double> log_gap(acts.size() - 1);
  for (size_t i = 0; i + 1 < acts.size(); ++i)
    log_gap[i] = std::log(double(std::max<int64_t>(1, acts[i + 1].start_ns - acts[i].end_ns)));
  std::vector<double> sorted = log_gap;
  std::sort(sorted.begin(), sorted.end());
  // Candidate classes: every jump of at least the ratio, the highest first. The long gaps must
  // recur (not one stall), with short gaps between nearly every two of them.
  double threshold = NAN;
  for (size_t j = sorted.size() - 1; j > 0 && std::isnan(threshold); --j) {
    if (sorted[j] - sorted[j - 1] < std::log(min_step_gap_ratio)) continue;
    const double t = (sorted[j] + sorted[j - 1]) / 2;
    std::vector<size_t> long_at;
    for (size_t i = 0; i < log_gap.size(); ++i)
      if (log_gap[i] >= t) long_at.push_back(i);
    if (long_at.size() < 3) continue;
    size_t with_short = 0;
    for (size_t i = 1; i < long_at.size(); ++i)
      if (long_at[i] > long_at[i - 1] + 1) ++with_short;
    if (5 * with_short >= 4 * (long_at.size() - 1)) threshold = t;
  }
  if (std::isnan(threshold)) return acts;
  std::vector<Activity> out{acts[0]};
  for (size_t i = 1; i < acts.size(); ++i) {
    if (log_gap[i - 1] >= threshold) {
      out.push_back(acts[i]);
      continue;
    }
    Activity& a = out.back();
    a.last = acts[i].last;
    a.end_ns = std::max(a.end_ns, acts[i].end_ns);
  }
  return out;
}

std::vector<Activity> JoinCollectiveFragments(const std::vector<Activity>& acts,
                                              const std::vector<DpTransfer>& sorted,
                                              double max_joined_share,
                                              double max_fragment_gap_share) {
  if (acts.size() < 4) return acts;
  std::unordered_map<uint32_t, uint32_t> member_of;  // sender -> member index
  for (const DpTransfer& t : sorted) {
    if (t.sender == kUnknownSender) return acts;
    member_of.try_emplace(t.sender, uint32_t(member_of.size()));
  }
  const size_t members = member_of.size();
  if (members < 2) return acts;
  // Each activity's senders (member indices, each once).
  std::vector<std::vector<uint32_t>> senders(acts.size());
  std::vector<size_t> stamp(members, SIZE_MAX), activities_of(members, 0);
  for (size_t k = 0; k < acts.size(); ++k)
    for (size_t i = acts[k].first; i <= acts[k].last; ++i) {
      const uint32_t m = member_of[sorted[i].sender];
      if (stamp[m] == k) continue;
      stamp[m] = k;
      senders[k].push_back(m);
      ++activities_of[m];
    }
  // Members that send in most activities; an activity missing one of them is incomplete.
  std::vector<bool> regular(members);
  size_t num_regular = 0;
  for (size_t m = 0; m < members; ++m)
    if (2 * activities_of[m] > acts.size()) regular[m] = true, ++num_regular;
  auto regular_count = [&](const std::vector<uint32_t>& v) {
    size_t n = 0;
    for (uint32_t m : v) n += regular[m];
    return n;
  };
  std::vector<int64_t> periods;  // end to end, between consecutive complete activities
  for (size_t k = 1; k < acts.size(); ++k)
    if (regular_count(senders[k]) == num_regular && regular_count(senders[k - 1]) == num_regular)
      periods.push_back(acts[k].end_ns - acts[k - 1].end_ns);
  if (periods.size() < 3) return acts;
  std::nth_element(periods.begin(), periods.begin() + periods.size() / 2, periods.end());
  const double period_ns = double(periods[periods.size() / 2]);
  const double max_joined_ns = max_joined_share * period_ns;
  const double max_fragment_gap_ns = max_fragment_gap_share * period_ns;

  // The senders of out.back(): member m sent in it when in_out[m] == out.size() - 1 (a stamp, so
  // that joining and starting an activity cost its own senders, not the group's size).
  std::vector<Activity> out;
  std::vector<size_t> in_out(members, SIZE_MAX);
  size_t out_regular = 0;  // regular members that sent in out.back()
  auto add_senders = [&](size_t k) {
    for (uint32_t m : senders[k])
      if (in_out[m] != out.size() - 1) {
        in_out[m] = out.size() - 1;
        out_regular += regular[m];
      }
  };
  out.push_back(acts[0]);
  add_senders(0);
  for (size_t k = 1; k < acts.size(); ++k) {
    Activity& a = out.back();
    const bool incomplete = out_regular < num_regular;
    bool brings_missing = false;
    if (incomplete)
      for (uint32_t m : senders[k])
        if (regular[m] && in_out[m] != out.size() - 1) brings_missing = true;
    const bool late_member =
        incomplete && brings_missing && double(acts[k].end_ns - a.start_ns) < max_joined_ns;
    const bool fragment = double(acts[k].start_ns - a.end_ns) < max_fragment_gap_ns;
    if (late_member || fragment) {
      a.last = acts[k].last;
      a.end_ns = std::max(a.end_ns, acts[k].end_ns);
      add_senders(k);
      continue;
    }
    out.push_back(acts[k]);
    out_regular = 0;
    add_senders(k);
  }
  return out;
}

namespace {

// The first activity is another kind of collective than the steps' DP phases (ddp on the
// real-traffic corpus: 50 ms against 633-652 ms) and ends later in its step: its end does not
// bound a step like theirs. A step's compute before its DP phase varies by a few percent (ddp:
// 1.233-1.258 s). Either alone is no sign: a DP phase cut by the window start is short and ends
// where it should; in the simulator a job's first step can be shorter than the next (a step
// that started before the window).
constexpr double kMaxFirstDurationShare = 0.5;
constexpr double kMinFirstLeadShare = 0.9;

// The transfer index at which `act` splits into two phases of equal bytes (within `balance`),
// the closest to equal among the transfers `may_split` accepts, or 0 if there is none.
template <typename MaySplit>
size_t PhaseSplit(const Activity& act, const std::vector<uint64_t>& cum_bytes, double balance,
                  MaySplit may_split) {
  const double total = double(cum_bytes[act.last + 1] - cum_bytes[act.first]);
  if (total <= 0) return 0;
  size_t best = 0;
  double best_off = balance;
  for (size_t i = act.first + 1; i <= act.last; ++i) {
    if (!may_split(i)) continue;
    const double off = std::fabs(double(cum_bytes[i] - cum_bytes[act.first]) / total - 0.5);
    if (off <= best_off) {
      best_off = off;
      best = i;
    }
  }
  return best;
}

// Whether the idle time before transfer `split` of `act` is the optimizer between the two
// phases of a two-phase DP step (the gradients' reduce-scatter, then the parameters'
// all-gather). The optimizer runs once a step: an idle time that another idle time of the same
// activity matches within kTwinGapRatio is a wait that recurs inside one phase (DDP's buckets
// waiting for the backward: the corpus's `ddp` splits its bytes in halves at the third of three
// such waits, 273-295 ms each, where `zero`'s optimizer idles 56-78 ms against 266-303 ms
// waits for the backward). A ring all-reduce idles far less than min_phase_gap_share of a step
// between its reduce-scatter and all-gather halves (`dp8`: 0.2-13 ms in 1.85-s steps), so it
// never reaches this test.
constexpr double kTwinGapRatio = 1.25;

bool OptimizerGapAt(const Activity& act, size_t split, const std::vector<int64_t>& idle_ns) {
  const double gap = double(idle_ns[split]);
  for (size_t i = act.first + 1; i <= act.last; ++i) {
    if (i == split) continue;
    const double other = double(idle_ns[i]);
    if (other * kTwinGapRatio >= gap && other <= gap * kTwinGapRatio) return false;
  }
  return true;
}

// Median end-to-end period of consecutive activities (0 with fewer than 3).
int64_t MedianPeriod(const std::vector<Activity>& acts) {
  if (acts.size() < 3) return 0;
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < acts.size(); ++i) gaps.push_back(acts[i].end_ns - acts[i - 1].end_ns);
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  return gaps[gaps.size() / 2];
}

template <typename T>
T MedianOf(std::vector<T> v) {
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The first step's start (header: "The first step"): when the first activity is shorter than
// `max_first_duration_share` of the later ones' median and ends closer to the next DP phase than
// `min_first_lead_share` of their median lead, the step starts that median lead before its DP
// phase instead.
void AnchorFirstStep(std::vector<Activity>* acts, double max_first_duration_share,
                     double min_first_lead_share) {
  if (acts->size() < 4) return;
  std::vector<int64_t> leads, durations;
  for (size_t k = 1; k < acts->size(); ++k) {
    durations.push_back((*acts)[k].end_ns - (*acts)[k].start_ns);
    if (k >= 2) leads.push_back((*acts)[k].start_ns - (*acts)[k - 1].end_ns);
  }
  const int64_t lead = MedianOf(std::move(leads));
  Activity& first = (*acts)[0];
  const int64_t dp_start = (*acts)[1].start_ns;
  if (lead <= 0 || double(dp_start - first.end_ns) >= min_first_lead_share * double(lead) ||
      double(first.end_ns - first.start_ns) >=
          max_first_duration_share * double(MedianOf(std::move(durations))))
    return;
  first.end_ns = dp_start - lead;
  first.start_ns = std::min(first.start_ns, first.end_ns);
}

// A thread's working vectors for DpActivities, kept from group to group: with --threads the
// process allocates on one malloc arena (apps/llmprism/analyze_cmd.cc), and the groups' threads
// queued on its lock for vectors of every group's size, allocated and freed per group (the DP
// groups' steps on two threads took 15-16 ms at 10,240 GPUs against 11 ms on separate arenas and
// 20 ms on one thread).
struct DpScratch {
  std::vector<DpTransfer> transfers;  // FindDpGroupSteps' group, gathered
  std::vector<int64_t> starts, ends, idle_ns;
  std::vector<uint64_t> cum_bytes;
  std::vector<Activity> bursts;
  std::vector<size_t> split;
  std::vector<bool> may_split;
};

DpScratch& ThreadDpScratch() {
  thread_local DpScratch scratch;
  return scratch;
}

// DpActivities of `transfers`, which it sorts.
std::vector<Activity> DpActivitiesOf(std::vector<DpTransfer>& transfers, int64_t window_end_ns,
                                     double tail_guard_steps, const StepSegmenterOptions& options) {
  std::sort(transfers.begin(), transfers.end());
  DpScratch& scratch = ThreadDpScratch();
  std::vector<int64_t>& starts = scratch.starts;
  std::vector<int64_t>& ends = scratch.ends;
  std::vector<uint64_t>& cum_bytes = scratch.cum_bytes;
  starts.resize(transfers.size());
  ends.resize(transfers.size());
  cum_bytes.assign(transfers.size() + 1, 0);
  for (size_t i = 0; i < transfers.size(); ++i) {
    starts[i] = transfers[i].start_ns;
    ends[i] = transfers[i].end_ns;
    cum_bytes[i + 1] = cum_bytes[i] + transfers[i].bytes;
  }
  std::vector<Activity>& bursts = scratch.bursts;
  auto acts = JoinCollectiveFragments(
      MergeAlternatingSteps(SegmentSteps(starts, ends, options, &bursts),
                            options.min_step_gap_ratio),
      transfers);
  // Two-phase DP: cut each activity back to its first phase where most activities split in
  // halves of equal bytes at the optimizer: an idle time of the whole group of at least
  // min_phase_gap_share of a step that no other idle time of the activity matches
  // (OptimizerGapAt). The group's idle time is the same however the exporter cut the records.
  const int64_t min_gap_ns = int64_t(options.min_phase_gap_share * double(MedianPeriod(acts)));
  std::vector<int64_t>& idle_ns = scratch.idle_ns;
  IdleBeforeInto(starts, ends, idle_ns);
  std::vector<size_t>& split = scratch.split;
  split.assign(acts.size(), 0);
  size_t two_phase = 0;
  for (size_t k = 0; k < acts.size(); ++k) {
    split[k] = PhaseSplit(acts[k], cum_bytes, options.phase_balance,
                          [&](size_t i) { return idle_ns[i] >= min_gap_ns; });
    if (split[k] != 0 && OptimizerGapAt(acts[k], split[k], idle_ns)) ++two_phase;
  }
  // In a two-phase group, every activity is split where its halves meet at an idle time of at
  // least min_phase_gap_share of a step or at a burst boundary (an idle gap BOCD cut): a step
  // whose optimizer was short still has its phases.
  if (two_phase >= 2 && 2 * two_phase > acts.size()) {
    std::vector<bool>& may_split = scratch.may_split;
    may_split.assign(transfers.size(), false);
    for (const Activity& b : bursts) may_split[b.first] = true;
    for (size_t i = 1; i < idle_ns.size(); ++i)
      if (min_gap_ns > 0 && idle_ns[i] >= min_gap_ns) may_split[i] = true;
    for (size_t k = 0; k < acts.size(); ++k)
      split[k] = PhaseSplit(acts[k], cum_bytes, options.phase_balance,
                            [&](size_t i) { return may_split[i]; });
  }
  if (two_phase >= 2 && 2 * two_phase > acts.size()) {
    std::vector<Activity> first_phases;
    for (size_t k = 0; k < acts.size(); ++k) {
      Activity a = acts[k];
      if (split[k] == 0) {
        if (k == 0 || k + 1 == acts.size()) continue;  // cut by the window: a phase may be missing
      } else {
        a.last = split[k] - 1;
        a.end_ns = *std::max_element(ends.begin() + a.first, ends.begin() + a.last + 1);
      }
      first_phases.push_back(a);
    }
    acts = std::move(first_phases);
  }
  if (acts.size() >= 3) {
    const int64_t step = MedianPeriod(acts);
    if (window_end_ns - acts.back().end_ns < int64_t(tail_guard_steps * double(step)))
      acts.pop_back();
  }
  AnchorFirstStep(&acts, kMaxFirstDurationShare, kMinFirstLeadShare);
  return acts;
}

}  // namespace

std::vector<Activity> DpActivities(std::vector<DpTransfer> transfers, int64_t window_end_ns,
                                   double tail_guard_steps, const StepSegmenterOptions& options) {
  return DpActivitiesOf(transfers, window_end_ns, tail_guard_steps, options);
}

DpGroupSteps FindDpGroupSteps(const std::vector<Pair>& pairs,
                              const std::vector<PairTransfers>& transfers,
                              const EndpointContext& ctx, const std::vector<int>& job_of,
                              const std::vector<int>& tp_of_job, int64_t window_end_ns,
                              double tail_guard_steps, const StepSegmenterOptions& options,
                              int threads) {
  const size_t num_endpoints = ctx.host.size();
  DpGroupSteps out;
  out.group_of.assign(num_endpoints, -1);
  UnionFind uf(num_endpoints);
  for (const Pair& p : pairs)
    if (p.label == PairLabel::kDp) uf.Union(p.a, p.b);
  // Inside a host, a ring hops over NVLink between the GPUs of one TP rank.
  std::map<std::tuple<int, int, int>, uint32_t> first_of;  // (job, host, local mod tp) -> GPU
  for (uint32_t e = 0; e < num_endpoints; ++e) {
    const int j = job_of[e];
    if (j < 0 || ctx.local_gpu[e] < 0) continue;
    auto key = std::make_tuple(j, ctx.host[e], ctx.local_gpu[e] % std::max(1, tp_of_job[j]));
    auto [it, inserted] = first_of.try_emplace(key, e);
    if (!inserted) uf.Union(it->second, e);
  }
  std::vector<int> root_group(num_endpoints, -1);
  std::vector<std::vector<uint32_t>> group_pairs;  // per group: its DP pairs, in pair order
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair& p = pairs[i];
    if (p.label != PairLabel::kDp) continue;
    uint32_t root = uf.Find(p.a);
    if (root_group[root] < 0) {
      root_group[root] = static_cast<int>(group_pairs.size());
      group_pairs.emplace_back();
    }
    const int g = root_group[root];
    out.group_of[p.a] = out.group_of[p.b] = g;
    group_pairs[g].push_back(uint32_t(i));
  }
  // Each group's transfers are gathered on the thread that segments them (the copy is as much
  // work as the segmentation for small groups), in pair order as one pass would.
  out.steps.resize(group_pairs.size());
  ParallelFor(group_pairs.size(), threads, [&](size_t g) {
    size_t n = 0;
    for (uint32_t i : group_pairs[g]) n += transfers[i].transfers.size();
    std::vector<DpTransfer>& group_transfers = ThreadDpScratch().transfers;
    group_transfers.clear();
    group_transfers.reserve(n);
    for (uint32_t i : group_pairs[g]) {
      const Pair& p = pairs[i];
      for (const Transfer& t : transfers[i].transfers)
        group_transfers.push_back({t.start_ns, t.end_ns, t.bytes, t.from_a ? p.a : p.b});
    }
    out.steps[g] = DpActivitiesOf(group_transfers, window_end_ns, tail_guard_steps, options);
  });
  return out;
}

void MeasurePpPairs(std::vector<Pair>* pairs, const std::vector<PairTransfers>& transfers,
                    const DpGroupSteps& groups, int threads) {
  ParallelForInChunks(pairs->size(), threads, kPairsPerChunk, [&](size_t i) {
    Pair& p = (*pairs)[i];
    if (p.label != PairLabel::kPp) return;
    int g = groups.group_of[p.a] >= 0 ? groups.group_of[p.a] : groups.group_of[p.b];
    if (g < 0) return;
    const auto& acts = groups.steps[g];
    const auto& ts = transfers[i].transfers;
    // Kept by the thread from pair to pair: with threads, allocations queue on the one malloc
    // arena (docs/design.md, Threads).
    thread_local std::vector<uint32_t> from_a, from_b;
    from_a.clear();
    from_b.clear();
    int vote = 0;
    size_t cursor = 0;
    // Step k runs from the end of DP activity k-1 to the end of DP activity k.
    for (size_t k = 1; k < acts.size(); ++k) {
      while (cursor < ts.size() && ts[cursor].start_ns < acts[k - 1].end_ns) ++cursor;
      uint32_t na = 0, nb = 0;
      bool first = true;
      for (size_t j = cursor; j < ts.size() && ts[j].start_ns < acts[k].end_ns; ++j) {
        if (first) vote += ts[j].from_a ? 1 : -1;
        first = false;
        (ts[j].from_a ? na : nb)++;
      }
      if (na + nb == 0) continue;
      from_a.push_back(na);
      from_b.push_back(nb);
    }
    if (from_a.empty()) return;
    p.evidence.first_from_a = vote;
    p.evidence.per_step_from_a = MedianU32(from_a);
    p.evidence.per_step_from_b = MedianU32(from_b);
  });
}

}  // namespace prism::analysis
