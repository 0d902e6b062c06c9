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

#include <string>
#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/classify/transfers.h"
#include "analysis/steps/step_segmenter.h"

namespace prism::analysis {

struct PairClassifierOptions {
  TransferOptions transfers;
  StepSegmenterOptions steps;
  double size_tolerance = 0.01;
  double one_way_fraction = 0.02;  // below this share of the bytes, a direction carries no data
  uint32_t min_transfers_for_direction = 4;
};

// Distinct values among `sizes` when values within `tolerance` (relative) are the same.
size_t CountDistinctSizes(std::vector<uint64_t> sizes, double tolerance);

Pair ClassifyPair(const GpuPair& pair, const PairTransfers& transfers,
                  const PairClassifierOptions& options);

// Applies the structural refinements above; returns how many labels changed.
size_t RefinePairs(std::vector<Pair>* pairs, size_t num_endpoints);

}  // namespace prism::analysis
