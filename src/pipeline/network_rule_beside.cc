#include "pipeline/network_rule_beside.h"

namespace prism::pipeline {

NetworkRuleBeside::NetworkRuleBeside(const flow::FlowTable& flows, const PointTable& points,
                                     const analysis::EndpointContext& ctx,
                                     const diagnosis::DiagnosisOptions& options)
    : flows_(flows), points_(points), ctx_(ctx), options_(options) {}

NetworkRuleBeside::~NetworkRuleBeside() {
  if (running_.valid()) running_.wait();  // the rule reads the caller's table until it ends
}

void NetworkRuleBeside::Start(const analysis::AnalysisResults& labelled) {
  labelled_.jobs = labelled.jobs;
  labelled_.job_of = labelled.job_of;
  labelled_.pairs = labelled.pairs;
  running_ = std::async(std::launch::async, [this] {
    const diagnosis::RuleContext rc{flows_, points_, ctx_, labelled_, options_};
    return diagnosis::FindNetworkDegradation(rc);
  });
}

diagnosis::NetworkFindings NetworkRuleBeside::Take() { return running_.get(); }

}  // namespace prism::pipeline
