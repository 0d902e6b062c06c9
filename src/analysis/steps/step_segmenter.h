// File: analysis/steps/step_segmenter.h
// Cuts a time-ordered sequence of transfers into training steps (docs/design.md, Pair
// classification, Timelines).
//
// Two stages, both documented in docs/stats.md:
//  1. Bursts: BOCD (analysis/changepoint) on the log idle times between transfers (from the latest
//     end so far to the next start, floored), with the lagged-mass rule. The detector is reset after every cut, so a run never spans two bursts and
//     the next long gap is as surprising as the first (on a periodic on/off signal an unreset
//     detector learns the long gaps as part of one bimodal regime and stops firing). A detection is
//     placed on the largest interval within the lag window around it, and kept only if that
//     interval is at least `min_cut_ratio` times the burst's median interval.
//  2. Steps: the idle gaps between bursts are split in two classes at a jump of their sorted
//     logarithms of at least `min_step_gap_ratio`: the lowest such jump that cuts the series into
//     regular steps, else the most regular one (with no such jump, every gap between bursts is a step gap). Then one pass over the transfers starts a new step wherever the idle
//     time exceeds that threshold. This joins a ring all-reduce's buckets, or ZeRO's reduce-scatter
//     and all-gather, into one step, and a step gap the detector missed is still a step gap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "analysis/changepoint/bocd.h"

namespace prism::analysis {

inline BocdOptions DefaultIntervalBocd() {
  BocdOptions o;
  o.hazard = 0.2;  // bursts are short: a few to a few hundred transfers
  return o;
}

struct StepSegmenterOptions {
  BocdOptions bocd = DefaultIntervalBocd();  // prior is set per series; hazard / lag / threshold used
  int64_t min_interval_ns = 1'000;  // intervals are clamped to this before the log
  double min_cut_ratio = 4.0;
  double min_step_gap_ratio = 3.0;
  // Steps are regular: a cut whose step periods lie within this factor of their median (10th
  // and 90th percentiles; contention and stragglers move steps by tens of percent) is preferred
  // to one with more steps that are not (StepGapThreshold).
  double max_period_irregularity = 1.6;
  // With no regular cut at a min_step_gap_ratio jump, the lowest regular cut at a jump of this.
  double min_regular_gap_ratio = 1.3;
  // Also judge a cut as the final pass makes it, at every transfer's idle gap, not only at the
  // gaps between bursts (StepGapThreshold). For the steps of DP groups: a step gap the burst
  // detector ran over still ends a step there. Not for a pair's own segments in classification,
  // whose rules read the order of directions within the shorter segments the bursts give (a
  // tensor-parallel pair cut only at its training steps looks like an unordered collective).
  bool judge_cut_on_transfers = false;
  // Look for bursts (BOCD) only where the transfers' own idle gaps do not settle the steps: when
  // the gaps between single transfers already cut the series into regular steps (StepGapCut's
  // `regular`), that cut is taken and BOCD is not run. For a pair's own segments in
  // classification: most of their cost was BOCD over pipeline pairs whose gaps alone show the
  // steps (docs/performance.md, "Classification: BOCD only where it pays").
  bool bursts_only_if_gaps_irregular = false;
  // Two-phase DP (dp_group_steps.h): a step's DP bytes split in halves within this share.
  double phase_balance = 0.1;
  // ... at an idle gap BOCD cut, or at an idle time of the whole group of at least this share of
  // the step period (the optimizer between the phases; a ring's steps idle for far less).
  double min_phase_gap_share = 0.02;
  size_t max_run_lengths = 32;      // bounds BOCD cost per point
  double min_log_sigma = 0.3;       // prior noise scale of log intervals, clamped to this range
  double max_log_sigma = 0.5;
};

// The options for the steps of DP groups (judge_cut_on_transfers).
inline StepSegmenterOptions DpGroupSegmenterOptions() {
  StepSegmenterOptions o;
  o.judge_cut_on_transfers = true;
  return o;
}

// The options for a pair's own segments in classification (bursts_only_if_gaps_irregular).
inline StepSegmenterOptions PairSegmenterOptions() {
  StepSegmenterOptions o;
  o.bursts_only_if_gaps_irregular = true;
  return o;
}

// Index range [first, last] of the transfers of one step's activity, with its time span.
struct Activity {
  size_t first = 0, last = 0;
  int64_t start_ns = 0, end_ns = 0;  // first start, last end
};

// Idle time before each transfer (`start_ns` ascending, `end_ns` aligned): from the latest end
// so far to its start, 0 for the first. What the final pass of SegmentSteps compares with the
// step-gap threshold.
std::vector<int64_t> IdleBefore(std::span<const int64_t> start_ns, std::span<const int64_t> end_ns);
// The same into `idle`, whose capacity a caller's scratch keeps from call to call.
void IdleBeforeInto(std::span<const int64_t> start_ns, std::span<const int64_t> end_ns,
                    std::vector<int64_t>& idle);

// Bursts of activity: `start_ns` ascending, `end_ns` aligned with it. `bocd_points`, if given, is
// increased by the points fed to the detector (intervals after a cut are fed again): the cost.
std::vector<Activity> FindBursts(std::span<const int64_t> start_ns, std::span<const int64_t> end_ns,
                                 const StepSegmenterOptions& options,
                                 uint64_t* bocd_points = nullptr);

// The idle gap (ns) above which a gap between bursts separates steps (see above), and whether it
// cuts the series into regular steps (a regular cut at a jump of min_step_gap_ratio or of
// min_regular_gap_ratio; not the most regular of irregular cuts, nor every gap). `bursts` are
// FindBursts' of the transfers `start_ns` / `end_ns` (or the transfers themselves, one each).
struct StepGapCut {
  int64_t threshold_ns = INT64_MAX;
  bool regular = false;
};
StepGapCut FindStepGapCut(const std::vector<Activity>& bursts, std::span<const int64_t> start_ns,
                          std::span<const int64_t> end_ns, const StepSegmenterOptions& options);
inline int64_t StepGapThreshold(const std::vector<Activity>& bursts,
                                std::span<const int64_t> start_ns, std::span<const int64_t> end_ns,
                                const StepSegmenterOptions& options) {
  return FindStepGapCut(bursts, start_ns, end_ns, options).threshold_ns;
}

// Per-step activities: transfers in order, a new step wherever the idle time since the latest end
// so far exceeds StepGapThreshold(FindBursts(...)) — also where BOCD missed the cut. If `bursts`
// is given, it receives FindBursts' bursts (none when bursts_only_if_gaps_irregular skipped them).
// `bocd_points`: as FindBursts' (unchanged when BOCD did not run).
std::vector<Activity> SegmentSteps(std::span<const int64_t> start_ns,
                                   std::span<const int64_t> end_ns,
                                   const StepSegmenterOptions& options,
                                   std::vector<Activity>* bursts = nullptr,
                                   uint64_t* bocd_points = nullptr);

}  // namespace prism::analysis
