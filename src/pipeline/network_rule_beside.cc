#include "pipeline/network_rule_beside.h"

namespace prism::pipeline {

NetworkRuleBeside::NetworkRuleBeside(const flow::FlowTable& flows, const PointTable& points,
                                     const analysis::EndpointContext& ctx,
                                     const diagnosis::DiagnosisOptions& options)
    : flows_(flows), points_(points), ctx_(ctx), options_(options) {}

NetworkRuleBeside::~NetworkRuleBeside() {
  if (running_.valid()) running_.wait();  // the rule reads the caller's table until it ends
}

void NetworkRuleBeside::Start(const analysis::AnalysisResults& results) {
  running_ = std::async(std::launch::async, [this, &results] {
    const diagnosis::RuleContext rc{flows_, points_, ctx_, results, options_};
    return diagnosis::FindNetworkDegradation(rc);
  });
}

diagnosis::NetworkFindings NetworkRuleBeside::Take() { return running_.get(); }

}  // namespace prism::pipeline
