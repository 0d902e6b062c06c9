// File: pipeline/network_rule_beside.h
// The diagnosis's network rule (diagnosis/rules/bandwidth_rule.h) on a thread of its own, beside
// the analysis's DP steps, layouts and timelines. The rule reads the window's records, the
// endpoint context, which GPU is in which job and the pairs' labels; the labels are final once
// classification is done (analysis::AnalysisOptions::on_labels_final), so started then, from a
// copy of them, it gives the findings it would give after the whole analysis. It is the larger
// part of diagnosis and the analysis's later stages leave a core idle much of their time: with
// --threads > 1 the two overlap instead of running one after the other.
#pragma once

#include <future>

#include "analysis/analysis_results.h"
#include "analysis/endpoint_context.h"
#include "core/name_table.h"
#include "diagnosis/diagnose.h"
#include "diagnosis/rules/bandwidth_rule.h"
#include "diagnosis/rules/rule_context.h"
#include "flow/flow_table.h"

namespace prism::pipeline {

class NetworkRuleBeside {
 public:
  // `flows`, `points`, `ctx` must stay unchanged until Take (or destruction, which waits).
  NetworkRuleBeside(const flow::FlowTable& flows, const PointTable& points,
                    const analysis::EndpointContext& ctx,
                    const diagnosis::DiagnosisOptions& options);
  NetworkRuleBeside(const NetworkRuleBeside&) = delete;
  NetworkRuleBeside& operator=(const NetworkRuleBeside&) = delete;
  ~NetworkRuleBeside();

  // Copies what the rule reads of `labelled` (jobs, job_of, pairs) and starts it.
  void Start(const analysis::AnalysisResults& labelled);
  bool started() const { return running_.valid(); }
  // Waits for the findings (once; rethrows what the rule threw).
  diagnosis::NetworkFindings Take();

 private:
  const flow::FlowTable& flows_;
  const PointTable& points_;
  const analysis::EndpointContext& ctx_;
  diagnosis::DiagnosisOptions options_;
  analysis::AnalysisResults labelled_;
  std::future<diagnosis::NetworkFindings> running_;
};

}  // namespace prism::pipeline
