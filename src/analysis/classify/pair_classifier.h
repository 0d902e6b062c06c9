// File: analysis/classify/pair_classifier.h
// Pair classification (docs/design.md): is a GPU pair data-parallel (DP) or pipeline-parallel (PP)?
//
// The paper's rule: cut the pair's transfers into steps (analysis/steps), count the distinct
// transfer sizes in each step (within `size_tolerance`), take the mode over steps: 1 -> PP, more
// -> DP. It is fragile where a DP collective shows one size per step (ZeRO's uniform buckets, a
// collector that merges a burst), so RefinePairs() backs it with structure:
//  - DP groups are transitive: a PP-labelled pair inside a component of DP pairs is DP, unless
//    its data is balanced both ways (what a pipeline pair looks like);
//  - pipelines send gradients back: a pair labelled PP whose data flows one way only is DP
//    (a ring all-reduce of more than two ranks sends one way along each edge).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/classify/transfers.h"
#include "analysis/steps/step_segmenter.h"

namespace prism::analysis {

struct PairClassifierOptions {
  TransferOptions transfers;
  StepSegmenterOptions steps = PairSegmenterOptions();
  double size_tolerance = 0.01;
  double one_way_fraction = 0.02;  // below this share of the bytes, a direction carries no data
  uint32_t min_transfers_for_direction = 4;
  // Pipeline: at least this share of the steps with data both ways open with the same direction
  // alone and close with the other alone (lost records and window edges spoil a few).
  double min_ordered_share = 0.6;
  uint32_t min_steps_for_order = 2;
  // Collective: data both ways in most steps (`min_both_way_share` of its steps, at least
  // `min_steps_for_unordered`), and of those at most `max_unordered_share` open with one direction
  // alone and close with the other (either way round). On real captures a two-rank ring's
  // directions need not start within `align_ns` (TCP, CPU load), but they exchange both ways
  // every step and are ordered only by chance (<= 21% measured, where pipeline pairs are >= 44%);
  // a middle pipeline stage's pair can show one direction per segment of its own (both ways in
  // half its segments), which says nothing.
  // Only where the pair's own steps are regular (PeriodIrregularity <= `max_own_irregularity`):
  // cut into pieces, a pipeline pair's steps look unordered too.
  double max_unordered_share = 0.3;
  // ... or, more ordered than that, with the ordered steps split evenly between the directions:
  // at most `max_unordered_net_share` of the steps net of direction. Under packet sampling a
  // collective's records shrink to a few packets each, so a step often opens with one direction
  // alone and closes with the other, by chance, either way round (29-44% of the steps measured,
  // net 0-5%); a pipeline pair opens with the same direction (net from 21% where its own steps
  // are cut per micro-batch, near 100% otherwise).
  double max_unordered_net_share = 0.1;
  double min_both_way_share = 0.75;
  double max_own_irregularity = 1.3;
  // A pair with data in fewer steps than this share of its job's typical pair (the median of its
  // pairs' step counts) is not part of the job's step traffic: a setup broadcast between two GPUs
  // of a DP group that never talk again, an evaluation's one exchange. It is left unlabelled
  // (rule "sporadic") rather than made a DP or PP edge of the layout.
  double min_step_share = 0.1;
  // Steps, not transfers: a window holds fewer steps the longer they last (the 10 s after a job's
  // last full window hold 5 steps of 2 s), and the step-order pass needs a collective labelled DP
  // in that window to measure the others against. At most 1 ordered step of 5 is unlikely for a
  // pipeline pair, which opens with its forward direction alone in most steps.
  uint32_t min_steps_for_unordered = 5;
  // Collective: at least this share of the transfers start together with one of the other
  // direction, within `align_ns` (posting jitter and clock skew, well below a compute op).
  double min_aligned_share = 0.9;
  int64_t align_ns = 1'000'000;
};

// Distinct values among `sizes` when values within `tolerance` (relative) are the same.
size_t CountDistinctSizes(std::vector<uint64_t> sizes, double tolerance);

// Share of the transfers that start within `tolerance_ns` of a transfer of the other direction:
// ~1 for a collective that sends both ways at once (every ring step starts on both sides
// together), small for a pipeline pair, whose activations and gradients leave at independent
// times. Not the time the directions overlap: a slow network stretches every transfer until a
// pipeline's directions overlap too. `transfers` in start order.
double AlignedStartShare(std::span<const Transfer> transfers, int64_t tolerance_ns);

// Per step (index ranges into `transfers`): whether data flows both ways, and whether the step
// opens with a transfer that no transfer of the other direction overlaps and closes (latest end)
// with one of the other direction that none overlaps — a pipeline's forward-first, backward-last.
struct StepOrder {
  uint32_t both_way_steps = 0;
  uint32_t ordered_steps = 0;
  int32_t ordered_from_a = 0;  // ordered steps opened a -> b, minus those opened b -> a
};
StepOrder MeasureStepOrder(std::span<const Transfer> transfers, std::span<const Activity> steps);

// `bocd_points`, if given, receives the points its step segmentation fed to BOCD (0 when the
// idle gaps alone cut the steps).
Pair ClassifyPair(const GpuPair& pair, const PairTransfers& transfers,
                  const PairClassifierOptions& options, uint64_t* bocd_points = nullptr);

// Applies the structural refinements above; returns how many labels changed.
size_t RefinePairs(std::vector<Pair>* pairs, size_t num_endpoints);

// Unlabels the pairs with data in fewer steps than `min_step_share` of their job's median pair
// (jobs of at least three labelled pairs); returns how many.
size_t UnlabelSporadicPairs(std::vector<Pair>* pairs, double min_step_share);

}  // namespace prism::analysis
