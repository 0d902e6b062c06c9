#include "pipeline/analyze_window.h"

#include <algorithm>
#include <numeric>
#include <thread>
#include <utility>

#include "analysis/endpoint_context.h"
#include "core/big_blocks.h"
#include "flow/row_runs.h"
#include "pipeline/network_rule_beside.h"

namespace prism::pipeline {
namespace {

uint64_t CountNonGpuRecords(const flow::FlowTable& w, const analysis::EndpointContext& ctx,
                            int threads) {
  auto src = w.src();
  auto dst = w.dst();
  std::vector<uint64_t> count(flow::RowRunsFor(w.size(), threads), 0);
  flow::OnRowRuns(w.size(), threads, [&](size_t begin, size_t end, size_t t) {
    uint64_t n = 0;
    for (size_t r = begin; r < end; ++r) {
      if (!ctx.is_gpu[src[r]] || !ctx.is_gpu[dst[r]]) ++n;
    }
    count[t] = n;
  });
  return std::accumulate(count.begin(), count.end(), uint64_t{0});
}

}  // namespace

void PrepareWindowTable(flow::FlowTable* table, int threads) {
  table->SortByStart(threads);
  KeepBlocksForTheAnalysis(table->size());
  table->KeepRows(0, table->size(), threads);
}

void KeepBlocksForTheAnalysis(size_t records) {
  KeepBigBlocksFor({sizeof(uint32_t) * records, sizeof(uint32_t) * records});
}

void KeepBlocksForDiagnosis(size_t records) { KeepBigBlocksFor({sizeof(uint16_t) * records}); }

WindowSummary AnalyzeWindow(flow::FlowTable table, const WindowInputs& in,
                            const WindowOptions& options, diagnosis::BaselineStore* baselines,
                            Stats* input_stats, output::ReportBuilder* report,
                            analysis::StageTimer* timer, std::vector<analysis::StageTime>* laps) {
  auto lap = [timer](const char* name, uint64_t items) {
    if (timer != nullptr) timer->Lap(name, items);
  };
  WindowSummary out;
  out.records = table.size();
  KeepBlocksForTheAnalysis(table.size());  // a window copied from a larger table sorted itself
  analysis::EndpointContext ctx = analysis::BuildEndpointContext(table.endpoints(), in.topology);
  out.non_gpu_records = CountNonGpuRecords(table, ctx, options.analysis.threads);
  if (input_stats != nullptr) input_stats->Add(Stat::records_non_gpu, out.non_gpu_records);
  lap("window", out.records);

  out.analysis.timings = laps != nullptr;
  diagnosis::DiagnosisOptions diagnosis_options = options.diagnosis;
  diagnosis_options.threads = options.analysis.threads;
  analysis::AnalysisOptions analysis_options = options.analysis;
  // The columns transfers alone read are let go, but for the block diagnosis takes first (its
  // record classes, 2 bytes per record, live from its start): kept through classification and
  // the timelines (below the sort's peak), where unmapped it was fresh pages again in diagnosis.
  analysis_options.on_transfers_built = [&table] {
    table.ReleaseTransferColumns();
    KeepBlocksForDiagnosis(table.size());
  };
  // With threads, the network rule starts as soon as the labels are final and measures its
  // record classes beside the analysis's later stages, then builds its grid once the analysis has
  // returned its freed memory (network_rule_beside.h); on one thread it runs in Diagnose.
  NetworkRuleBeside network(table, *in.points, ctx, diagnosis_options);
  if (analysis_options.threads > 1)
    analysis_options.on_labels_final = [&network](const analysis::AnalysisResults& labelled) {
      network.Start(labelled);
    };
  analysis::AnalysisResults results =
      analysis::Analyze(table, ctx, in.end_ns, analysis_options, &out.analysis);
  analysis_options.on_labels_final = nullptr;
  analysis_options.on_transfers_built = nullptr;
  // With threads the network rule's record classes are measured by now, and its grid comes next.
  // The heap the analysis freed (its transfers, the timelines' per-GPU lists) is not trimmed
  // back to the system: diagnosis and the report allocate into it. glibc's trim (malloc_trim)
  // gives back the free pages inside its free chunks 4 KiB at a time, and what was allocated there
  // afterwards came back a 4 KiB fault at a time, each ~12 us on a virtual machine
  // (bench/first_touch_benchmark.cc): at 10,240 GPUs ~6,300 of the run's ~10,000 faults. Kept
  // resident, the freed heap raises the peak by 2-6 bytes per record, which the 32-byte columns
  // leave room for under the 64-byte budget (docs/performance.md).
  KeepBlocksForDiagnosis(table.size());
  network.AnalysisDone();
  lap("analyze", out.records);  // replaced below by the analysis's own stages
  if (laps != nullptr && timer != nullptr) {
    laps->pop_back();
    for (auto& s : out.analysis.stages) laps->push_back(std::move(s));
    out.analysis.stages.clear();
    laps->push_back({"bocd_points_pairs", out.analysis.pair_bocd_points});
    laps->push_back({"bocd_points_dp", out.analysis.dp_group_transfers});
  }

  // With threads the network rule runs on a thread of its own beside the other rules
  // (network_rule_beside.h); on one thread Diagnose runs it after them.
  diagnosis::TakeNetworkFindings take_network;
  const diagnosis::RuleContext rule_context{table, *in.points, ctx, results, diagnosis_options};
  if (network.started()) {
    take_network = [&network] { return network.Take(); };
  } else {
    take_network = [&rule_context] {
      return diagnosis::FindNetworkDegradation(rule_context);
    };
  }
  std::vector<diagnosis::Finding> findings = diagnosis::Diagnose(
      table, *in.points, ctx, results, diagnosis_options, baselines, take_network);
  if (options.measure_switch_bandwidth) {
    out.switch_dp_bandwidth = diagnosis::MeasureSwitchDpBandwidth(table, *in.points, ctx, results);
  }
  if (options.fabric_contribution) {
    // Before the table's columns are freed below: the records the fabric rule reads.
    out.fabric = diagnosis::BuildFabricContribution(rule_context);
    for (const analysis::Job& job : results.jobs) {
      std::vector<IpAddr>& gpus = out.fabric_job_gpus.emplace_back();
      for (EndpointId g : job.gpus) gpus.push_back(table.endpoints().Addr(g));
      std::sort(gpus.begin(), gpus.end());
      gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    }
  }
  lap("diagnose", out.records);
  out.jobs = results.jobs.size();
  out.findings = findings.size();

  output::WindowInput window;
  window.start_ns = in.start_ns;
  window.end_ns = in.end_ns;
  window.SetFlows(table);
  // The report keeps the window's endpoints but none of its records: free the columns before it
  // copies the timelines, which would otherwise peak above diagnosis.
  EndpointTable endpoints = std::move(table.endpoints());
  table = flow::FlowTable();
  // The kept blocks (the columns among them) are unmapped; with threads, beside the report's copy
  // of the window: the kernel's freeing of their pages was 8-18 ms of the run's one-core tail at
  // 10,000 GPUs. A big block the copy asks for meanwhile is mapped afresh, as it would be after
  // the release (big blocks are thread-safe).
  std::jthread unmap_kept;
  if (options.analysis.threads > 1) unmap_kept = std::jthread(ReleaseBigBlocks);
  else ReleaseBigBlocks();
  window.endpoints = &endpoints;
  window.context = &ctx;
  window.results = &results;
  window.findings = &findings;
  report->AddWindow(window);
  if (unmap_kept.joinable()) unmap_kept.join();
  lap("report_window", out.records);
  return out;
}

}  // namespace prism::pipeline
