// File: diagnosis/rules/stage_peers.h
// What the two straggler rules (straggler_rule.h: per-op compute gaps; late_collective_rule.h:
// lateness into the DP collective) share: a pipeline stage's GPUs judged against their peers.
// Both group the timelines by (job, stage), compare over the steps every GPU of the stage has,
// keep per GPU the runs of flagged steps, and name the flagged GPUs of one finding in address
// order, each finding spanning its runs.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "analysis/analysis_results.h"
#include "core/name_table.h"
#include "diagnosis/robust_stats.h"

namespace prism::diagnosis {

// Each (job, stage)'s timelines, in the order of results.timelines; only timelines with a stage
// that `keep` accepts.
using StageTimelines =
    std::map<std::pair<int, int>, std::vector<const analysis::Timeline*>>;
StageTimelines TimelinesByStage(const analysis::AnalysisResults& results,
                                const std::function<bool(const analysis::Timeline&)>& keep);

// Steps every timeline of the stage has (compared step by step, by index).
size_t CommonSteps(const std::vector<const analysis::Timeline*>& tls);

// A GPU of a stage (its index in the stage's timelines) flagged over a run of steps.
struct GpuRun {
  size_t g;
  Run run;
};

// The steps a finding's runs span, and the longest run's flagged steps (its units).
struct RunsSpan {
  size_t first = SIZE_MAX, last = 0, units = 0;
};
RunsSpan SpanOf(const std::vector<GpuRun>& runs);

// Sorts GPUs by address, as findings name them.
void SortByAddress(const EndpointTable& endpoints, std::vector<EndpointId>* gpus);

}  // namespace prism::diagnosis
