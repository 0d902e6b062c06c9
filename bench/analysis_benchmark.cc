// Pair classification and job recognition on synthetic ring jobs (bench_data.h), in records per
// second: the per-record passes (DistinctPairs, BuildAllTransfers) and the
// per-pair work (BOCD step segmentation, size counting) of analysis/analyze.cc.
#include <benchmark/benchmark.h>

#include <vector>

#include "analysis/classify/pair_classifier.h"
#include "analysis/classify/transfers.h"
#include "analysis/endpoint_context.h"
#include "analysis/jobs/job_recognition.h"
#include "bench/bench_data.h"
#include "flow/flow_table.h"

namespace prism::bench {
namespace {

flow::FlowTable RingTable(int jobs, int gpus, int steps) {
  PointTable points;
  flow::FlowTable t;
  for (const FlowRecord& r : RingJobRecords(jobs, gpus, steps, &points)) t.OnRecord(r);
  t.SortByStart();
  return t;
}

void BM_RecognizeJobs(benchmark::State& state) {
  const flow::FlowTable t = RingTable(16, 256, 10);
  const analysis::EndpointContext ctx = analysis::BuildEndpointContext(t.endpoints(), nullptr);
  size_t jobs = 0;
  for (auto _ : state) {
    const auto keys = analysis::DistinctPairs(t.src(), t.dst());
    auto jr = analysis::RecognizeJobs(keys, t.endpoints(), ctx, {});
    jobs = jr.jobs.size();
    benchmark::DoNotOptimize(jr.job_of.data());
  }
  state.counters["jobs"] = double(jobs);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(t.size()));
}
BENCHMARK(BM_RecognizeJobs)->Unit(benchmark::kMillisecond);

void BM_ClassifyPairs(benchmark::State& state) {
  const flow::FlowTable t = RingTable(4, 64, 200);
  const analysis::EndpointContext ctx = analysis::BuildEndpointContext(t.endpoints(), nullptr);
  const auto jr = analysis::RecognizeJobs(analysis::DistinctPairs(t.src(), t.dst()), t.endpoints(),
                                          ctx, {});
  const analysis::PairClassifierOptions options;
  size_t dp = 0, transfers = 0;
  for (auto _ : state) {
    const auto built = analysis::BuildAllTransfers(t, jr.job_of, options.transfers);
    dp = transfers = 0;
    for (size_t i = 0; i < built.pairs.size(); ++i) {
      const analysis::Pair p = analysis::ClassifyPair(built.pairs[i], built.transfers[i], options);
      dp += p.label == analysis::PairLabel::kDp;
      transfers += built.transfers[i].transfers.size();
    }
  }
  state.counters["dp_pairs"] = double(dp);
  state.counters["transfers"] = double(transfers);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(t.size()));
}
BENCHMARK(BM_ClassifyPairs)->Unit(benchmark::kMillisecond);

// Records to per-pair transfers on 1 or 2 threads (argument 0), in one pass or with the rows
// listed per pair first (argument 1 = 1; the route of windows with many pairs). Wall time: the
// threads' work is what this measures.
void BM_BuildAllTransfers(benchmark::State& state) {
  const flow::FlowTable t = RingTable(4, 64, 200);
  const analysis::EndpointContext ctx = analysis::BuildEndpointContext(t.endpoints(), nullptr);
  const auto jr = analysis::RecognizeJobs(analysis::DistinctPairs(t.src(), t.dst()), t.endpoints(),
                                          ctx, {});
  analysis::TransferOptions options;
  if (state.range(1) == 1) options.single_pass_max_pairs = 0;
  size_t transfers = 0;
  for (auto _ : state) {
    const auto built =
        analysis::BuildAllTransfers(t, jr.job_of, options, static_cast<int>(state.range(0)));
    transfers = 0;
    for (const auto& p : built.transfers) transfers += p.transfers.size();
    benchmark::DoNotOptimize(transfers);
  }
  state.counters["transfers"] = double(transfers);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(t.size()));
}
BENCHMARK(BM_BuildAllTransfers)
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->ArgNames({"threads", "listed"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace prism::bench
