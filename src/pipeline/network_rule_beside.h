// File: pipeline/network_rule_beside.h
// The diagnosis's network rule (diagnosis/rules/bandwidth_rule.h) on a thread of its own. It reads
// the window's records, the endpoint context, which GPU is in which job and the pairs' labels;
// the labels are final once classification is done (analysis::AnalysisOptions::on_labels_final),
// so started then, from a copy of them, it gives the findings it would give after the whole
// analysis. It is the larger part of diagnosis: with --threads > 1 it runs beside the analysis's
// later stages and the diagnosis's other rules instead of after them.
//
// Only its first part runs beside the analysis, on this thread alone: the record classes and the
// endpoints' paces (CPU over every record, a few MB), while the analysis finds the DP steps and
// builds the timelines one job at a time on the other core. Then it waits for
// AnalysisDone before it builds its cell grid (tens of MB, the rule's memory peak). Built beside
// the timelines, while the heap still held the transfers they had freed, the grid took the
// process's peak at two threads to 64-69 bytes per record on scale-10k and paper, over what one
// thread needs (docs/performance.md).
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

  // Copies what the rule reads of `labelled` (jobs, job_of, the pairs' ends, jobs and labels)
  // and starts it.
  void Start(const analysis::AnalysisResults& labelled);
  bool started() const { return running_.valid(); }
  // The analysis has ended and freed its transfers: the rule may build its grid. Take and
  // the destructor call it if the caller has not; once is enough.
  void AnalysisDone();
  // Waits for the findings (once; rethrows what the rule threw).
  diagnosis::NetworkFindings Take();

 private:
  struct LabelledPair {
    EndpointId a, b;
    int job;
    analysis::PairLabel label;
  };

  const flow::FlowTable& flows_;
  const PointTable& points_;
  const analysis::EndpointContext& ctx_;
  diagnosis::DiagnosisOptions options_;
  analysis::AnalysisResults labelled_;
  std::promise<void> analysis_done_;
  bool analysis_done_set_ = false;
  std::future<diagnosis::NetworkFindings> running_;
};

}  // namespace prism::pipeline
