// Metamorphic tests: the same traffic cut into records another way — an exporter's active timeout
// splitting long records, a longer idle timeout merging a flow's records, 1-in-N packet sampling —
// must give the same jobs, pair labels, layouts and step times. The reference is the analysis of
// the unchanged records (and the simulator's truth); each transform is applied to the records
// before they reach the analysis, as a collector with that setting would have cut them.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "analysis/analyze.h"
#include "sim/scenarios.h"
#include "sim/simulator.h"
#include "testing/record_transforms.h"

namespace prism {
namespace {

struct Outcome {
  std::map<std::pair<std::string, std::string>, std::string> labels;  // (a, b) -> label
  std::vector<std::string> layouts;                                    // "dp x pp x tp: stages"
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> steps;  // gpu -> steps
};

Outcome AnalyzeRecords(const std::vector<FlowRecord>& records, const Topology& topo,
                       int64_t window_end_ns) {
  flow::FlowTable table;
  for (const FlowRecord& r : records) table.OnRecord(r);
  table.SortByStart();
  const auto ctx = analysis::BuildEndpointContext(table.endpoints(), &topo);
  const auto results = analysis::Analyze(table, ctx, window_end_ns, {}, nullptr);
  const auto ip = [&](EndpointId e) { return table.endpoints().Addr(e).ToString(); };
  Outcome out;
  for (const auto& p : results.pairs)
    if (p.label != analysis::PairLabel::kUnknown)
      out.labels[{ip(p.a), ip(p.b)}] = analysis::PairLabelName(p.label);
  for (const auto& j : results.jobs) {
    std::string s = std::to_string(j.layout.dp) + "x" + std::to_string(j.layout.pp) + "x" +
                    std::to_string(j.layout.tp) + ":";
    for (const auto& stage : j.layout.stages) {
      s += " [";
      for (EndpointId g : stage) s += ip(g) + " ";
      s += "]";
    }
    out.layouts.push_back(s);
  }
  std::sort(out.layouts.begin(), out.layouts.end());
  for (const auto& t : results.timelines)
    for (const auto& s : t.steps) out.steps[ip(t.gpu)].push_back({s.start_ns, s.end_ns});
  return out;
}

// Relative differences of step durations between the reference and a transformed run, over the
// steps of each GPU that overlap by more than half: the largest one.
double WorstStepChange(const Outcome& ref, const Outcome& got, size_t* matched) {
  double worst = 0;
  *matched = 0;
  for (const auto& [gpu, steps] : ref.steps) {
    auto it = got.steps.find(gpu);
    if (it == got.steps.end()) continue;
    for (const auto& [s0, e0] : steps) {
      for (const auto& [s1, e1] : it->second) {
        const double d = double(e0 - s0);
        const double overlap = double(std::min(e0, e1) - std::max(s0, s1));
        if (overlap <= d / 2) continue;
        ++*matched;
        worst = std::max(worst, std::abs(double(e1 - s1) - d) / d);
      }
    }
  }
  return worst;
}

struct SimRun {
  std::vector<FlowRecord> records;
  Topology topology;
  int64_t end_ns = 0;
  Outcome reference;
  size_t reference_steps = 0;
};

const SimRun& Simulated(const std::string& scenario, uint64_t seed) {
  static std::map<std::pair<std::string, uint64_t>, SimRun> cache;
  auto [it, inserted] = cache.try_emplace({scenario, seed});
  SimRun& run = it->second;
  if (!inserted) return run;
  const sim::SimConfig config = *sim::MakeScenario(scenario, seed);
  sim::Cluster cluster(config.fabric);
  testing::RecordCollector collector;
  PointTable points;
  const auto truth = sim::Simulate(config, cluster, &collector, &points);
  EXPECT_TRUE(truth.has_value());
  run.records = std::move(collector.records);
  run.topology = cluster.MakeTopology();
  run.end_ns = truth->end_ns;
  run.reference = AnalyzeRecords(run.records, run.topology, run.end_ns);
  for (const auto& [gpu, steps] : run.reference.steps) run.reference_steps += steps.size();
  return run;
}

void ExpectSameAnswer(const SimRun& run, const std::vector<FlowRecord>& transformed,
                      double max_step_change) {
  const Outcome got = AnalyzeRecords(transformed, run.topology, run.end_ns);
  EXPECT_EQ(got.layouts, run.reference.layouts);
  size_t wrong = 0;
  for (const auto& [pair, label] : run.reference.labels) {
    auto it = got.labels.find(pair);
    if (it == got.labels.end() || it->second != label) ++wrong;
  }
  EXPECT_EQ(wrong, 0u) << "of " << run.reference.labels.size() << " pairs";
  EXPECT_EQ(got.labels.size(), run.reference.labels.size());
  size_t matched = 0;
  const double worst = WorstStepChange(run.reference, got, &matched);
  EXPECT_GE(matched, run.reference_steps * 95 / 100);
  EXPECT_LE(worst, max_step_change);
}

class SimInvariance : public ::testing::TestWithParam<std::string> {};

TEST_P(SimInvariance, ActiveTimeoutSplits) {
  const SimRun& run = Simulated(GetParam(), 3);
  for (int64_t timeout_ms : {10, 100, 1000}) {
    SCOPED_TRACE(timeout_ms);
    ExpectSameAnswer(run, testing::SplitRecords(run.records, timeout_ms * 1'000'000), 0.01);
  }
}

TEST_P(SimInvariance, LongerIdleTimeoutMerges) {
  const SimRun& run = Simulated(GetParam(), 3);
  for (int64_t gap_us : {10, 100, 1000}) {
    SCOPED_TRACE(gap_us);
    ExpectSameAnswer(run, testing::MergeRecords(run.records, gap_us * 1'000), 0.01);
  }
}

TEST_P(SimInvariance, PacketSampling) {
  const SimRun& run = Simulated(GetParam(), 3);
  for (uint32_t n : {10u, 100u}) {
    SCOPED_TRACE(n);
    ExpectSameAnswer(run, testing::SampleRecords(run.records, n, 7), 0.01);
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, SimInvariance, ::testing::Values("tiny", "uniform-dp"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace prism
