// File: analysis/classify/group_structure.h
// Pair labels, last pass: the labels checked against the shape a training job's groups must have.
//
// Each earlier pass judges a pair by its own traffic, held against its GPUs' other pairs. Under
// heavy sampling (1 in 10 packets) a pair has a few transfers per step, and a collective's can
// come out ordered like a pipeline's by chance; the passes that lean on it then go wrong in
// turn (a pipeline pair denser than that "pipeline" is taken for TP). The labels together still
// have to describe a parallel layout, and that is checked here:
// - A TP group lies inside one pipeline stage, so a TP component (GPUs joined by TP pairs) never
//   holds both ends of a pipeline pair. Where one does, the TP pairs of the component that are no
//   denser than that pipeline pair (less than min_count_ratio times its transfers: a TP
//   all-reduce runs in every layer, a pipeline pair once per micro-batch) are pipeline pairs
//   (rule "pipeline-between-tp-groups").
// - A stage is the GPUs joined by DP and TP pairs; pipeline pairs join stages. A job whose
//   pipeline pairs mostly join two stages and a few join a stage to itself: those few are
//   collectives (rule "within-stage"). When most pipeline pairs fall inside a stage, a DP or TP
//   label has joined stages and the pipeline pairs are not the ones in doubt: nothing changes.
#pragma once

#include <cstddef>
#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/classify/transfers.h"

namespace prism::analysis {

// Relabels TP pairs that join the ends of a pipeline pair, no denser than it, as PP; returns how
// many.
size_t SplitTpGroupsAcrossPipelines(std::vector<Pair>* pairs,
                                    const std::vector<PairTransfers>& transfers,
                                    size_t num_endpoints, double min_count_ratio);

// Relabels a job's pipeline pairs inside one stage as DP when they are fewer than its pipeline
// pairs between stages; returns how many.
size_t RelabelPipelinePairsWithinStages(std::vector<Pair>* pairs, size_t num_endpoints);

}  // namespace prism::analysis
