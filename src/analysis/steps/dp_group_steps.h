// File: analysis/steps/dp_group_steps.h
// Step boundaries before the layout is known. The DP pairs form groups (components of the DP
// graph: one ring, or with TP < G the part of a ring between two hosts); the end of each DP
// activity of a group marks a step boundary for its GPUs (SPEC.md §3.3). With these boundaries
// the PP pairs are measured per step — which direction sends first (activations go forward at
// the start of a step) and how many transfers each way (one per micro-batch) — for the layout.
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

// Step activities of one set of DP transfers (start, end), with the tail guard.
std::vector<Activity> DpActivities(std::vector<std::pair<int64_t, int64_t>> transfers,
                                   int64_t window_end_ns, double tail_guard_steps,
                                   const StepSegmenterOptions& options);

// Re-measures PP pairs per step with the DP boundaries of their first GPU's group: fills
// evidence.first_from_a, per_step_from_a and per_step_from_b.
void MeasurePpPairs(std::vector<Pair>* pairs, const std::vector<PairTransfers>& transfers,
                    const DpGroupSteps& groups);

}  // namespace prism::analysis
