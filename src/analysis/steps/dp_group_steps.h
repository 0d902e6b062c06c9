// File: analysis/steps/dp_group_steps.h
// Step boundaries before the layout is known. The DP pairs form groups (components of the DP graph:
// one ring, or with TP < G the part of a ring between two hosts); the end of each DP activity of a
// group marks a step boundary for its GPUs (docs/design.md, DP groups and step boundaries). With
// these boundaries the PP pairs are measured per step — which direction sends first (activations go
// forward at the start of a step) and how many transfers each way (one per micro-batch) — for the
// layout.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/classify/transfers.h"
#include "analysis/endpoint_context.h"
#include "analysis/steps/step_segmenter.h"

namespace prism::analysis {

struct DpGroupSteps {
  std::vector<int> group_of;                  // per endpoint: DP group index or -1
  std::vector<std::vector<Activity>> steps;   // per group: DP activities, in time order
};

// Cuts the DP transfers of each DP group into step activities. A group is a component of the DP
// pairs joined, inside a host, with the GPUs of the same TP rank (local index mod `tp_of_job`):
// with TP < G a ring passes through each host over NVLink, unseen. The last activity is dropped
// when it ends within `tail_guard_steps` of a step from `window_end_ns` (its burst may be cut).
DpGroupSteps FindDpGroupSteps(const std::vector<Pair>& pairs,
                              const std::vector<PairTransfers>& transfers,
                              const EndpointContext& ctx, const std::vector<int>& job_of,
                              const std::vector<int>& tp_of_job, int64_t window_end_ns,
                              double tail_guard_steps, const StepSegmenterOptions& options,
                              int threads = 1);  // groups are segmented in parallel

inline constexpr uint32_t kUnknownSender = UINT32_MAX;

struct DpTransfer {
  int64_t start_ns = 0, end_ns = 0;
  uint64_t bytes = 0;
  uint32_t sender = kUnknownSender;  // endpoint id of the GPU that sent it
  bool operator<(const DpTransfer& o) const {
    return start_ns != o.start_ns ? start_ns < o.start_ns : end_ns < o.end_ns;
  }
};

// Step activities of one set of DP transfers, with the tail guard. Two-phase DP (ZeRO / a
// distributed optimizer: the gradients' reduce-scatter, an idle gap for the optimizer, then the
// parameters' all-gather overlapping the next forward) is recognised from the traffic alone:
//  - steps cut in pieces (at the optimizer gap, or at waits for backward between buckets) show
//    as step gaps of two classes, the long ones recurring once per period: the short ones are
//    joined (MergeAlternatingSteps);
//  - a step's activity whose bytes split in two equal halves (within `phase_balance`) at the
//    optimizer (the whole group idle for at least `min_phase_gap_share` of a step, an idle time
//    no other one of the activity matches) has two phases; when most activities do, each
//    activity is cut back to its first phase, the gradient collective, so that its end is the
//    step boundary as with an all-reduce (the all-gather's length varies with contention and
//    overlaps compute). Activities at the window's edges without the split are partial and
//    dropped.
// An all-reduce (a ring idling for milliseconds between its halves on a loaded host; DDP's
// buckets, equal waits for the backward between them) is not cut: docs/stats.md, "Two-phase DP".
// Before that, a collective cut in pieces is joined (JoinCollectiveFragments).
// The first step: step k runs from the end of activity k-1 to the end of activity k, and the
// first activity's end bounds the first step only if that activity ends where a step's DP phase
// does. A job's first collective can be of another kind and end later in its step (the corpus's
// `ddp`: 50 ms, where the later all-reduces overlap the backward for 0.63-0.65 s, and 0.94 s
// before the next DP phase, where the others end 1.23-1.26 s before theirs; the report's first
// step was 17-18% short). When the first activity is less than half as long as the later ones and
// ends closer to the next DP phase than their median lead (previous end to DP start) by more than
// 10%, the first step starts that median lead before its DP phase, as the other steps do. One
// sign alone changes nothing: a DP phase cut by the window start is short but ends where it
// should, and a first step can be genuinely short or slow.
std::vector<Activity> DpActivities(std::vector<DpTransfer> transfers, int64_t window_end_ns,
                                   double tail_guard_steps, const StepSegmenterOptions& options);

// Joins consecutive activities across step gaps at least `min_step_gap_ratio` times shorter than
// the long ones (classes split at a jump of the sorted log gaps, the highest that qualifies), when
// the long gaps recur (at least 3) and at least 4 in 5 intervals between two long gaps hold short
// ones: a
// step's DP phase cut in pieces (the optimizer gap between two phases, or bucket waits that the
// step-gap threshold took for step gaps). One long gap (a stall) changes nothing.
std::vector<Activity> MergeAlternatingSteps(const std::vector<Activity>& acts,
                                            double min_step_gap_ratio);

// A step's collective that the step-gap threshold cut in pieces is joined back:
//  - a late member: a collective ends only when every member has sent. While one member's
//    backward still runs (a straggler), the others start and then wait for it, and the wait is an
//    idle gap that can pass for a step gap. An activity in which a member that sends in most
//    activities sent nothing is joined with the next when that one has the missing member's sends
//    and the two together last less than `max_joined_share` of the usual step (the median
//    end-to-end period between complete activities) — a member missing from a whole step (its
//    records lost) leaves a gap of a full step, which is not joined;
//  - a fragment: an activity that starts less than `max_fragment_gap_share` of the usual step
//    after the previous one ended (a wait inside the collective that a few steps show, too rare
//    to form the recurring class MergeAlternatingSteps joins). No step is that short.
// Transfers are `sorted`, with senders known; with an unknown sender (or fewer than 3 periods
// between complete activities) the activities are returned unchanged.
std::vector<Activity> JoinCollectiveFragments(const std::vector<Activity>& acts,
                                              const std::vector<DpTransfer>& sorted,
                                              double max_joined_share = 0.9,
                                              double max_fragment_gap_share = 0.1);

// Re-measures PP pairs per step with the DP boundaries of their first GPU's group: fills
// evidence.first_from_a, per_step_from_a and per_step_from_b. Pairs on `threads` threads.
void MeasurePpPairs(std::vector<Pair>* pairs, const std::vector<PairTransfers>& transfers,
                    const DpGroupSteps& groups, int threads = 1);

}  // namespace prism::analysis
