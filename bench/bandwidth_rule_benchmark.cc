// The bandwidth rule's two passes over a window's records (diagnosis/rules/bandwidth_cells.h): the
// record classes with their medians and the endpoints' paces, and the cell grid, on synthetic
// ring jobs (bench_data.h) whose hosts sit 2 to a leaf and whose records were observed at 400
// switches named as leaves, in records per second. In a whole run they are most of diagnosis; a
// benchmark repeats them in one process, on warm memory, where whole runs vary by tens of percent
// from one run to the next on a shared virtual machine (docs/performance.md).
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <vector>

#include "analysis/classify/pair_classifier.h"
#include "analysis/classify/transfers.h"
#include "analysis/endpoint_context.h"
#include "analysis/jobs/job_recognition.h"
#include "bench/bench_data.h"
#include "core/topology.h"
#include "diagnosis/rules/bandwidth_cells.h"
#include "diagnosis/rules/rule_context.h"
#include "diagnosis/rules/slow_endpoints.h"
#include "flow/flow_table.h"

namespace prism::bench {
namespace {

constexpr int kSwitches = 400;

// A window of 16 jobs of 256 GPUs over 40 steps (655,360 records, 4 bins of 5 s), its jobs
// recognized and its pairs labelled as the analysis does.
struct RuleWindow {
  PointTable points;
  flow::FlowTable table;
  Topology topology;
  analysis::EndpointContext ctx;
  analysis::AnalysisResults results;

  RuleWindow() {
    for (const FlowRecord& r : RingJobRecords(16, 256, 40, &points, kSwitches)) table.OnRecord(r);
    table.SortByStart();
    for (EndpointId e = 0; e < table.endpoints().size(); ++e) {
      const IpAddr ip = table.endpoints().Addr(e);
      const uint32_t gpu = ip.v4() - 0x0A000000u;
      const uint32_t leaf = gpu / 16 % kSwitches;  // as RingJobRecords names its switches
      topology.Add({ip, fmt::format("host{}", gpu / 8), int(gpu % 8),
                    fmt::format("leaf-p{:03}-r{}", leaf / 8, leaf % 8), EndpointKind::kGpu});
    }
    ctx = analysis::BuildEndpointContext(table.endpoints(), &topology);
    auto jr = analysis::RecognizeJobs(analysis::DistinctPairs(table.src(), table.dst()),
                                      table.endpoints(), ctx, {});
    results.jobs = std::move(jr.jobs);
    results.job_of = std::move(jr.job_of);
    const analysis::PairClassifierOptions options;
    const auto built = analysis::BuildAllTransfers(table, results.job_of, options.transfers);
    for (size_t i = 0; i < built.pairs.size(); ++i)
      results.pairs.push_back(analysis::ClassifyPair(built.pairs[i], built.transfers[i], options));
  }
};

const RuleWindow& Window() {
  static const RuleWindow* window = new RuleWindow();
  return *window;
}

void BM_BandwidthRecordClasses(benchmark::State& state) {
  const RuleWindow& w = Window();
  diagnosis::DiagnosisOptions options;
  options.threads = int(state.range(0));
  const diagnosis::RuleContext rc{w.table, w.points, w.ctx, w.results, options};
  const diagnosis::CellGrid bins = diagnosis::EmptyCellGrid(rc);
  size_t classes = 0;
  for (auto _ : state) {
    diagnosis::PairPaceSums paces(bins.t0, bins.bin_ns, bins.bins);
    const auto measured = diagnosis::RecordClasses::Measure(rc, &paces);
    classes = measured.classes();
    benchmark::DoNotOptimize(measured.RelativeBandwidth(0));
  }
  state.counters["classes"] = double(classes);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(w.table.size()));
}
BENCHMARK(BM_BandwidthRecordClasses)->Arg(1)->Arg(2)->ArgName("threads")
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_BandwidthCellGrid(benchmark::State& state) {
  const RuleWindow& w = Window();
  diagnosis::DiagnosisOptions options;
  options.threads = int(state.range(0));
  const diagnosis::RuleContext rc{w.table, w.points, w.ctx, w.results, options};
  const auto classes = diagnosis::RecordClasses::Measure(rc);
  size_t cells = 0;
  for (auto _ : state) {
    const diagnosis::CellGrid grid = diagnosis::BuildCellGrid(rc, classes);
    cells = grid.cells.size();
    benchmark::DoNotOptimize(cells);
  }
  state.counters["cells"] = double(cells);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(w.table.size()));
}
BENCHMARK(BM_BandwidthCellGrid)->Arg(1)->Arg(2)->ArgName("threads")
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace prism::bench
