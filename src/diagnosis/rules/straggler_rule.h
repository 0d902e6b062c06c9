// File: diagnosis/rules/straggler_rule.h
// Straggler GPUs (a GPU-side cause): in every step, each GPU's median compute gap — the time from
// its previous communication event to its next PP send, i.e. one forward or backward op — is
// compared with the other GPUs of its pipeline stage, which run the same schedule. A GPU whose
// gaps exceed its peers' median by k sigma and the minimum effect, over consecutive steps, is a
// straggler. GPUs of one host flagged together are one finding: the network cannot see inside a
// tensor-parallel group, whose GPUs wait for each other over NVLink.
#pragma once

#include <vector>

#include "diagnosis/finding.h"
#include "diagnosis/rules/rule_context.h"

namespace prism::diagnosis {

std::vector<Finding> FindStragglers(const RuleContext& rc);

}  // namespace prism::diagnosis
