#include "pipeline/network_rule_beside.h"

namespace prism::pipeline {

NetworkRuleBeside::NetworkRuleBeside(const flow::FlowTable& flows, const PointTable& points,
                                     const analysis::EndpointContext& ctx,
                                     const diagnosis::DiagnosisOptions& options)
    : flows_(flows), points_(points), ctx_(ctx), options_(options) {}

NetworkRuleBeside::~NetworkRuleBeside() {
  AnalysisDone();  // a rule still holding for it would wait forever
  if (running_.valid()) running_.wait();  // the rule reads the caller's table until it ends
}

void NetworkRuleBeside::Start(const analysis::AnalysisResults& labelled) {
  labelled_.jobs = labelled.jobs;
  labelled_.job_of = labelled.job_of;
  labelled_.pairs = labelled.pairs;
  std::shared_future<void> analysis_done = analysis_done_.get_future().share();
  running_ = std::async(std::launch::async, [this, analysis_done] {
    const diagnosis::RuleContext rc{flows_, points_, ctx_, labelled_, options_};
    return diagnosis::FindNetworkDegradation(rc, [&analysis_done] { analysis_done.wait(); });
  });
}

void NetworkRuleBeside::AnalysisDone() {
  if (analysis_done_set_) return;
  analysis_done_set_ = true;
  analysis_done_.set_value();
}

diagnosis::NetworkFindings NetworkRuleBeside::Take() {
  AnalysisDone();
  return running_.get();
}

}  // namespace prism::pipeline
