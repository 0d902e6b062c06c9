#include "pipeline/network_rule_beside.h"

#include <vector>

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
  // The rule reads a pair's ends, job and label, not its evidence. Copied whole, the pairs (with
  // a rule name each, most on the heap) took the caller up to 9 ms of fresh pages and allocations
  // at 10,240 GPUs, while the analysis waited: the caller copies those four fields, and the
  // rule's thread makes its pairs of them.
  std::vector<LabelledPair> pairs;
  pairs.reserve(labelled.pairs.size());
  for (const analysis::Pair& p : labelled.pairs) pairs.push_back({p.a, p.b, p.job, p.label});
  std::shared_future<void> analysis_done = analysis_done_.get_future().share();
  running_ = std::async(std::launch::async, [this, analysis_done, pairs = std::move(pairs)] {
    labelled_.pairs.resize(pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
      analysis::Pair& p = labelled_.pairs[i];
      p.a = pairs[i].a;
      p.b = pairs[i].b;
      p.job = pairs[i].job;
      p.label = pairs[i].label;
    }
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
