// File: diagnosis/rules/rule_context.h
// What every diagnosis rule reads: the window's records, names, topology view and analysis.
#pragma once

#include "analysis/analysis_results.h"
#include "analysis/endpoint_context.h"
#include "core/name_table.h"
#include "diagnosis/diagnose.h"
#include "flow/flow_table.h"

namespace prism::diagnosis {

struct RuleContext {
  const flow::FlowTable& flows;
  const PointTable& points;
  const analysis::EndpointContext& ctx;
  const analysis::AnalysisResults& results;
  const DiagnosisOptions& options;
};

// Severity of a finding that persisted `units` and exceeded its baseline by `effect` (relative):
// one unit is info (3 sigma fires by chance over thousands of GPU-steps); persistence makes a
// warning; a large and lasting effect is critical.
inline Severity SeverityFor(int units, double effect, const DiagnosisOptions& o) {
  if (units < o.persist_units) return Severity::kInfo;
  if (units >= 3 * o.persist_units && effect >= 0.3) return Severity::kCritical;
  return Severity::kWarning;
}

}  // namespace prism::diagnosis
