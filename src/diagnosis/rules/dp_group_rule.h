// File: diagnosis/rules/dp_group_rule.h
// Slow DP groups (docs/diagnosis.md): in every step, each DP group's collective time — from its
// members' first DP transfer to their last — is compared across the groups of the same job and
// stage (the same collective on other GPUs). A group over its peers' median by k sigma and the
// minimum effect, for consecutive steps, is a finding. It is a symptom: the collective is slow
// because its network is (the bandwidth rule names the switch or link) or because a member came
// late; so it is reported at info severity, with the network finding's switches as its cause when
// one overlaps, and the alert rests on the cause's own finding.
#pragma once

#include <vector>

#include "diagnosis/finding.h"
#include "diagnosis/rules/rule_context.h"

namespace prism::diagnosis {

std::vector<Finding> FindSlowDpGroups(const RuleContext& rc);

}  // namespace prism::diagnosis
