// File: diagnosis/rules/slow_step_rule.h
// Slow steps: a job's step durations against its healthy baseline. The baseline is the calmest
// regime of the window — BOCD (analysis/changepoint) cuts the duration series into regimes, and
// the one with the lowest median among those long enough is taken — or, when one was carried
// over from earlier windows, that one. A step is slow when it exceeds the baseline by k sigma and
// by the minimum effect; consecutive slow steps (one normal step may interrupt) form a finding.
#pragma once

#include <vector>

#include "diagnosis/finding.h"
#include "diagnosis/rules/rule_context.h"

namespace prism::diagnosis {

std::vector<Finding> FindSlowSteps(const RuleContext& rc, BaselineStore* baselines);

}  // namespace prism::diagnosis
