// File: output/text_summary.h
// The readable terminal summary of a Report (output/report.h) that `llmprism analyze` prints:
// jobs with their layout and stage order, step times, findings ranked most severe first with their
// evidence, and what happened to the input (records read, skipped and why). Plain, stable text
// unless `color` (the caller passes isatty(1)): then ANSI colours mark severities and headings.
#pragma once

#include <string>

#include "output/report.h"

namespace prism::output {

// Size of a finding's effect, for ranking: max(value/baseline, baseline/value), so a slowdown to
// 1.5x and a bandwidth drop to 1/1.5 weigh the same; 1 when either is not positive.
double FindingEffect(const ReportFinding& finding);

std::string FormatSummary(const Report& report, bool color);

}  // namespace prism::output
