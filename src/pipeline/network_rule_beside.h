// File: pipeline/network_rule_beside.h
// The diagnosis's network rule (diagnosis/rules/bandwidth_rule.h) on a thread of its own, beside
// the diagnosis's other rules. It is most of the diagnosis; the others read the analysis's steps
// and timelines and run meanwhile on the caller's thread.
//
// It starts when the analysis has ended and returned its freed memory, not earlier. Started as
// soon as the pairs' labels were final, beside DP steps and timelines, its record classes and cell
// grid (tens of MB) met the timelines' memory peak while the heap still held the transfers they
// had freed: at two threads the process peaked at 64-69 bytes per record on scale-10k and paper,
// over what one thread needs, and the run was no faster (docs/performance.md).
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

  // Starts the rule on the analysis's `results`, which must also stay unchanged until Take.
  void Start(const analysis::AnalysisResults& results);
  bool started() const { return running_.valid(); }
  // Waits for the findings (once; rethrows what the rule threw).
  diagnosis::NetworkFindings Take();

 private:
  const flow::FlowTable& flows_;
  const PointTable& points_;
  const analysis::EndpointContext& ctx_;
  diagnosis::DiagnosisOptions options_;
  std::future<diagnosis::NetworkFindings> running_;
};

}  // namespace prism::pipeline
