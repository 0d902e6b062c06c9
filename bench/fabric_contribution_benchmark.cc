// The fabric stage's cost (diagnosis/rules/fabric_contribution.h, docs/scale-out.md): the
// `shards` scenario (seed 1) cut into `serve`'s 20-s windows sliding by 5 s, each window's records
// split by job over 2 shards as e2e_serve_shards splits them (the 64-GPU job on shard 0, the two
// 32-GPU jobs on shard 1, records of no job on shard 0), each shard's window analysed alone.
// Counters: the encoded contributions' bytes per shard and window, per record they carry and per
// record observed at a spine; timed: what the fabric stage does per window (decode every shard's
// contribution, merge, judge).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "diagnosis/rules/fabric_contribution.h"
#include "diagnosis/rules/fabric_contribution_codec.h"
#include "diagnosis/rules/fabric_evaluation.h"
#include "sim/scenarios.h"
#include "sim/simulator.h"

namespace prism::bench {
namespace {

struct ShardWindows {
  std::vector<std::vector<std::string>> encoded;  // [window][shard]
  size_t records = 0, contribution_records = 0, spine_records = 0, bytes = 0;
};

// Records observed at a switch that is neither end's leaf (a spine), as the rule's routes say.
size_t SpineRecords(const diagnosis::FabricContribution& c) {
  size_t n = 0;
  for (size_t r = 0; r < c.records(); ++r) {
    if (c.point[r] == kNoPoint) continue;
    const std::string& at = c.points[c.point[r]];
    auto leaf = [&](uint32_t e) {
      const int32_t l = c.endpoint_leaf[e];
      return l < 0 ? std::string() : c.leaf_names[size_t(l)];
    };
    if (at != leaf(c.src[r]) && at != leaf(c.dst[r])) ++n;
  }
  return n;
}

const ShardWindows& Windows() {
  static const ShardWindows* out = [] {
    auto* w = new ShardWindows;
    const sim::SimConfig config = *sim::MakeScenario("shards", 1);
    sim::Cluster cluster(config.fabric);
    flow::FlowTable all;
    PointTable points;
    const auto truth = sim::Simulate(config, cluster, &all, &points);
    all.SortByStart();
    const Topology topo = cluster.MakeTopology();
    const auto all_ctx = analysis::BuildEndpointContext(all.endpoints(), &topo);
    const auto all_results = analysis::Analyze(all, all_ctx, truth->end_ns, {}, nullptr);
    const auto start = all.start_ns();
    for (int64_t from = start[0]; from + 20'000'000'000 <= start.back() + 5'000'000'000;
         from += 5'000'000'000) {
      flow::FlowTable shard[2];
      for (size_t r = size_t(std::lower_bound(start.begin(), start.end(), from) - start.begin());
           r < all.size() && start[r] < from + 20'000'000'000; ++r) {
        const int js = all_results.job_of[all.src()[r]], jd = all_results.job_of[all.dst()[r]];
        const int job = js >= 0 ? js : jd;
        FlowRecord rec{.start_ns = start[r], .end_ns = all.EndNs(r),
                       .src = all.endpoints().Addr(all.src()[r]),
                       .dst = all.endpoints().Addr(all.dst()[r]), .qp = all.qp()[r],
                       .bytes = all.Bytes(r), .sampling_rate = all.SamplingRate(r),
                       .point = all.point()[r]};
        shard[job > 0 ? 1 : 0].OnRecord(rec);
        ++w->records;
      }
      auto& encoded = w->encoded.emplace_back();
      for (flow::FlowTable& t : shard) {
        t.SortByStart();
        const auto ctx = analysis::BuildEndpointContext(t.endpoints(), &topo);
        const auto results = analysis::Analyze(t, ctx, truth->end_ns, {}, nullptr);
        const diagnosis::DiagnosisOptions o;
        const auto c = diagnosis::BuildFabricContribution({t, points, ctx, results, o});
        encoded.push_back(diagnosis::EncodeFabricContribution(c));
        w->contribution_records += c.records();
        w->spine_records += SpineRecords(c);
        w->bytes += encoded.back().size();
      }
    }
    return w;
  }();
  return *out;
}

void BM_FabricStageWindow(benchmark::State& state) {
  const ShardWindows& w = Windows();
  // The window from 5 to 25 s: spine01 degraded from 10 s (from the window's start on, the rule
  // leaves a degradation to the service's history, and the window from 10 s finds none).
  const std::vector<std::string>& window = w.encoded[1];
  size_t findings = 0, records = 0;
  for (auto _ : state) {
    std::vector<diagnosis::FabricContribution> parts;
    for (const std::string& b : window)
      parts.push_back(*diagnosis::DecodeFabricContribution(
          {reinterpret_cast<const uint8_t*>(b.data()), b.size()}));
    const auto merged = diagnosis::MergeFabricContributions(parts);
    records = merged.records();
    findings = diagnosis::EvaluateFabric(merged, {}).findings.size();
  }
  const double shard_windows = double(w.encoded.size() * 2);
  state.counters["windows"] = double(w.encoded.size());
  state.counters["bytes_per_shard_window"] = double(w.bytes) / shard_windows;
  state.counters["records_per_window"] = double(w.records) / double(w.encoded.size());
  state.counters["contribution_share"] = double(w.contribution_records) / double(w.records);
  state.counters["bytes_per_contribution_record"] = double(w.bytes) / double(w.contribution_records);
  state.counters["bytes_per_spine_record"] = double(w.bytes) / double(w.spine_records);
  state.counters["findings"] = double(findings);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(records));
}
BENCHMARK(BM_FabricStageWindow)->Unit(benchmark::kMillisecond)->UseRealTime();

// The `faults` scenario (seed 1: 2,880 GPUs, one minute) as one window on one shard, analysed once.
struct FaultsWindow {
  flow::FlowTable table;
  PointTable points;
  Topology topology;
  analysis::EndpointContext ctx;
  analysis::AnalysisResults results;
};

const FaultsWindow& Faults() {
  static const FaultsWindow* out = [] {
    auto* w = new FaultsWindow;
    const sim::SimConfig config = *sim::MakeScenario("faults", 1);
    sim::Cluster cluster(config.fabric);
    const auto truth = sim::Simulate(config, cluster, &w->table, &w->points);
    w->table.SortByStart();
    w->topology = cluster.MakeTopology();
    w->ctx = analysis::BuildEndpointContext(w->table.endpoints(), &w->topology);
    w->results = analysis::Analyze(w->table, w->ctx, truth->end_ns, {}, nullptr);
    return w;
  }();
  return *out;
}

// The contribution's size at the paper cluster's rate, and its build and encoding (an analyser's
// part per window).
void BM_FabricContributionFaults(benchmark::State& state) {
  const FaultsWindow& w = Faults();
  const flow::FlowTable& t = w.table;
  const diagnosis::DiagnosisOptions o;
  size_t bytes = 0, records = 0, spine = 0;
  for (auto _ : state) {
    const auto c = diagnosis::BuildFabricContribution({t, w.points, w.ctx, w.results, o});
    bytes = diagnosis::EncodeFabricContribution(c).size();
    records = c.records();
    spine = SpineRecords(c);
  }
  state.counters["records"] = double(t.size());
  state.counters["contribution_share"] = double(records) / double(t.size());
  state.counters["bytes"] = double(bytes);
  state.counters["bytes_per_contribution_record"] = double(bytes) / double(records);
  state.counters["bytes_per_spine_record"] = double(bytes) / double(spine);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(t.size()));
}
BENCHMARK(BM_FabricContributionFaults)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// The fabric role's part of that window (serve --role fabric): decode, merge (one part) and judge.
void BM_FabricStageFaults(benchmark::State& state) {
  const FaultsWindow& w = Faults();
  const diagnosis::DiagnosisOptions o;
  const std::string bytes = diagnosis::EncodeFabricContribution(
      diagnosis::BuildFabricContribution({w.table, w.points, w.ctx, w.results, o}));
  size_t findings = 0, records = 0;
  for (auto _ : state) {
    std::vector<diagnosis::FabricContribution> parts;
    parts.push_back(*diagnosis::DecodeFabricContribution(
        {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}));
    const auto merged = diagnosis::MergeFabricContributions(parts);
    records = merged.records();
    findings = diagnosis::EvaluateFabric(merged, o).findings.size();
  }
  state.counters["contribution_records"] = double(records);
  state.counters["findings"] = double(findings);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(records));
}
BENCHMARK(BM_FabricStageFaults)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace prism::bench
