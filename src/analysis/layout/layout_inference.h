// File: analysis/layout/layout_inference.h
// Layout (docs/design.md), beyond the paper: a job's DP, PP and TP degrees, its stage order and its
// micro-batch count, from the labelled pairs.
//  - PP: the PP pairs form paths (one per DP replica and TP rank), stage 0 at one end. A path is
//    oriented by its pairs' votes: a step begins with activations flowing stage i -> i+1, so the
//    first transfer of a step goes forward. Stage s = position s on the oriented path.
//  - TP: Megatron orders ranks tp-dp-pp, so a ring all-reduce leaves a host from local GPU
//    index j to local index j - (G - tp) on the next host (G GPUs per host): tp = G - offset,
//    taken as the mode over one-way DP edges (offset 0: one DP rank per host, tp = G).
//  - DP = GPUs of a stage / TP; micro-batches = the mode of forward transfers per step.
#pragma once

#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/endpoint_context.h"
#include "analysis/jobs/pairs_by_job.h"
#include "core/name_table.h"

namespace prism::analysis {

// TP degree of a job (see above) from its pairs, `job_pairs` (indices into `pairs`).
int InferTensorParallel(const std::vector<Pair>& pairs, PairIndices job_pairs,
                        const EndpointContext& ctx, const Job& job);

// The size of the job's groups of TP-labelled pairs (TP across hosts; the mode over groups), 1
// when it has none.
int CrossHostTensorParallel(const std::vector<Pair>& pairs, PairIndices job_pairs);

// Fills job->layout (its tp already set by InferTensorParallel) and per endpoint the stage index
// (-1 for endpoints outside the job or without one). PP pairs must carry their per-step
// measurements (MeasurePpPairs).
void InferLayout(const std::vector<Pair>& pairs, PairIndices job_pairs, const EndpointTable& endpoints,
                 const EndpointContext& ctx, Job* job, std::vector<int>* stage_of);

}  // namespace prism::analysis
