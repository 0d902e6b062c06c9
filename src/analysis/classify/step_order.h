// File: analysis/classify/step_order.h
// Pair labels, second pass: a pair that sends both ways is tested against the job's steps.
//
// ClassifyPair looks at one pair alone. A two-way pair is a collective when its bursts start
// together both ways, a pipeline pair when its directions take turns; but on real traffic the two
// blur: stages in lockstep send a 1F1B pipeline's activations and gradients at the same moments,
// and a collective over a throttled link or between ranks descheduled by their host starts many
// bursts one way alone. What does not blur is a pipeline's shape within a training step: it opens
// with activations alone (the warm-up forwards) and closes with gradients alone (the cool-down
// backwards), the same directions every step. A collective's bursts, seen within the same steps,
// sit in one cluster that starts both ways at once.
//
// The steps come from the DP groups found so far (components of the pairs labelled DP, their
// activity ends: analysis/steps/dp_group_steps.h), never from the pair itself: a pair's own idle
// gaps do not say where a pipeline's steps end (a deep pipeline's warm-up bubble can outlast the
// step gap). A pair is measured against its own group when that group has other pairs, else
// against the job's group with the most pairs: every stage of a job steps at the same rate, and a
// pipeline pair's whole step falls between two ends of any stage's DP phase.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/classify/pair_classifier.h"
#include "analysis/classify/transfers.h"
#include "analysis/endpoint_context.h"
#include "analysis/steps/step_segmenter.h"

namespace prism::analysis {

struct StepOrderOptions {
  // Of the windows with data both ways, net of direction: a pipeline pair from this share on, a
  // collective up to `max_unordered_share` (a collective is ordered by chance only where a rank
  // is late, one way; a pipeline pair falls short where the reference steps are cut wrong).
  double min_ordered_share = 0.6;
  double max_unordered_share = 0.2;
  uint32_t min_steps = 3;
  double max_reference_irregularity = 2.0;  // PeriodIrregularity of a reference group's steps
  // A pair whose own steps (at least `min_own_steps` with data both ways) are nearly all ordered
  // (`own_ordered_share`) is a pipeline pair whatever the references say: a reference group can
  // be the wrong kind of group (a TP group taken for DP, with steps per micro-batch), and then its
  // windows cut a pipeline's order apart. Only that side: a pipeline pair's own segmentation can
  // cut its steps so that few look ordered (a middle stage of an over-segmented job), so a low own
  // share does not hold against a reference.
  double own_ordered_share = 0.9;
  uint32_t min_own_steps = 10;
};

// The larger of q90 / median and median / q10 of the periods between consecutive `step_ends`
// (1 = all equal); infinity for fewer than 3 periods.
double PeriodIrregularity(const std::vector<int64_t>& step_ends);

// Per window [ends[k-1], ends[k]) of `step_ends` (ascending): the transfers that start in it,
// tested as MeasureStepOrder tests a step.
struct WindowOrder {
  uint32_t both_way = 0;
  int32_t ordered_from_a = 0;  // ordered windows opened a -> b, minus those opened b -> a
};
WindowOrder MeasureOrderInWindows(const std::vector<Transfer>& transfers,
                                  const std::vector<int64_t>& step_ends);

// Relabels the two-way pairs of every job that has a DP group (above); fills evidence
// step_ordered_share. Returns how many labels changed.
size_t RefineByStepOrder(std::vector<Pair>* pairs, const std::vector<PairTransfers>& transfers,
                         const EndpointContext& ctx, const std::vector<int>& job_of,
                         const std::vector<int>& tp_of_job, int64_t window_end_ns,
                         const StepSegmenterOptions& steps, const StepOrderOptions& options,
                         int threads);

}  // namespace prism::analysis
