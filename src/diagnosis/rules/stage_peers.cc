#include "diagnosis/rules/stage_peers.h"

#include <algorithm>

namespace prism::diagnosis {

StageTimelines TimelinesByStage(const analysis::AnalysisResults& results,
                                const std::function<bool(const analysis::Timeline&)>& keep) {
  StageTimelines stages;
  for (const auto& t : results.timelines)
    if (t.stage >= 0 && keep(t)) stages[{t.job, t.stage}].push_back(&t);
  return stages;
}

size_t CommonSteps(const std::vector<const analysis::Timeline*>& tls) {
  size_t steps = SIZE_MAX;
  for (const analysis::Timeline* t : tls) steps = std::min(steps, t->steps.size());
  return steps;
}

RunsSpan SpanOf(const std::vector<GpuRun>& runs) {
  RunsSpan s;
  for (const GpuRun& r : runs) {
    s.first = std::min(s.first, r.run.first);
    s.last = std::max(s.last, r.run.last);
    s.units = std::max(s.units, r.run.flagged);
  }
  return s;
}

void SortByAddress(const EndpointTable& endpoints, std::vector<EndpointId>* gpus) {
  std::sort(gpus->begin(), gpus->end(),
            [&](EndpointId x, EndpointId y) { return endpoints.Addr(x) < endpoints.Addr(y); });
}

}  // namespace prism::diagnosis
