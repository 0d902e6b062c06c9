// File: diagnosis/rules/late_collective_rule.h
// Straggler GPUs of a data-parallel-only job (a GPU-side cause), from when each GPU joins the
// step's gradient collective.
//
// Without pipeline parallelism there are no sends between compute ops to time (the straggler
// rule's evidence): the only traffic of a step is its DP collective, at the end of the backward.
// A GPU that is still computing joins it late, and the others, having sent what they could, wait
// for it. So per step each GPU's first DP send (its first byte received may be an early peer's
// chunk) is compared with the stage's early senders (the lower quartile of the stage's first
// sends): a GPU late by at least `min_gpu_effect` of the step, by k sigma of the stage's lateness
// and by more than its own usual lateness (its lower quartile), over consecutive steps, is a
// straggler. GPUs late over the same steps are one finding: with a pairwise algorithm
// (halving-doubling, a two-rank exchange) the straggler's partner can only start with it, and
// flow records cannot tell which of the two computed (the one that sends first, by a round trip,
// usually did; the summary says which).
// Jobs with pipeline parallelism are left to the straggler rule, whose per-op evidence is finer.
#pragma once

#include <vector>

#include "diagnosis/finding.h"
#include "diagnosis/rules/rule_context.h"

namespace prism::diagnosis {

std::vector<Finding> FindLateCollectiveGpus(const RuleContext& rc);

}  // namespace prism::diagnosis
