// File: pipeline/analyze_window.h
// One analysis window, the same for `llmprism analyze` (each window of its files) and `serve`
// (each sliding window of live records): the window's records, the topology and the options go
// in; the analysis results (jobs, pair labels, layouts, timelines), the diagnosis (findings,
// baselines carried across windows) and the window's part of the report come out. Sits after
// analysis, diagnosis and output; the apps and the service call it.
//
// Steps, in the order whose memory peak docs/performance.md measures: endpoint context (and the
// records with a non-GPU end counted, records_non_gpu), Analyze (the transfer-only columns freed
// once the transfers are built), Diagnose (in the heap the analysis freed), optionally the
// per-switch DP bandwidth gauges (serve's /metrics), then the table's columns are freed before
// the report builder copies the timelines.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/stage_timer.h"
#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/topology.h"
#include "diagnosis/diagnose.h"
#include "diagnosis/rules/bandwidth_rule.h"
#include "diagnosis/rules/fabric_contribution.h"
#include "flow/flow_table.h"
#include "output/report.h"

namespace prism::pipeline {

struct WindowOptions {
  analysis::AnalysisOptions analysis;  // `threads` also sorts (the result is the same for any)
  diagnosis::DiagnosisOptions diagnosis;
  bool measure_switch_bandwidth = false;  // fill WindowSummary::switch_dp_bandwidth
  // A shard's analyser with a fabric stage (docs/scale-out.md): fill WindowSummary::fabric.
  bool fabric_contribution = false;
};

// The window's records as analysis wants them: sorted by start, endpoints numbered in row order.
// Both callers arrive here: analyze cuts its sorted table (FlowTable::CopyRows / KeepRows), serve
// sorts a window's table and then keeps all of its rows, which renumbers its endpoints the same
// way — so the same records give the same table, whichever path they came by.
void PrepareWindowTable(flow::FlowTable* table, int threads);

// After a sort of `records` rows: of the buffers the sort left kept (core/big_blocks.h), only the
// two that job recognition and transfers will take stay (4 bytes per record each, live together:
// each row's pair key, then its pair; then the rows listed per pair). The rest is unmapped, so it
// does not sit beside the stages in between. PrepareWindowTable and AnalyzeWindow call it; a
// caller that sorts a table of its own before cutting it calls it after that sort.
void KeepBlocksForTheAnalysis(size_t records);

// What a window leaves beside its part of the report.
struct WindowSummary {
  uint64_t records = 0;
  uint64_t non_gpu_records = 0;  // also added to the input counters (records_non_gpu)
  size_t jobs = 0;
  size_t findings = 0;
  std::vector<diagnosis::SwitchDpBandwidth> switch_dp_bandwidth;  // when asked for
  // When asked for: the window's fabric contribution (diagnosis/rules/fabric_contribution.h),
  // its jobs named by the window's ids, and each of those jobs' GPUs (addresses, sorted), by
  // which a caller that names jobs otherwise (the service's tracker) renames them.
  diagnosis::FabricContribution fabric;
  std::vector<std::vector<IpAddr>> fabric_job_gpus;
  analysis::AnalysisStats analysis;  // with stage timings when `laps` was given
};

struct WindowInputs {
  int64_t start_ns = 0, end_ns = 0;  // the window; end_ns also bounds trusted step activity
  const Topology* topology = nullptr;  // may be null
  const PointTable* points = nullptr;  // observation point names (required)
};

// Analyses `table` (prepared as above; consumed: its columns are freed before the report copies
// the timelines) and adds the window to `report`. `baselines` carries the diagnosis baselines
// across windows; `input_stats` receives records_non_gpu. With `laps`, the stages are timed as
// `analyze --timings` prints them ("window", the analysis stages, "bocd_points_*", "diagnose",
// "report_window"), continuing `timer`.
WindowSummary AnalyzeWindow(flow::FlowTable table, const WindowInputs& in,
                            const WindowOptions& options, diagnosis::BaselineStore* baselines,
                            Stats* input_stats, output::ReportBuilder* report,
                            analysis::StageTimer* timer = nullptr,
                            std::vector<analysis::StageTime>* laps = nullptr);

// Of the kept big blocks, only the one diagnosis of a window of `records` takes first (its record
// classes, 2 bytes per record: diagnosis/rules/bandwidth_cells.h) stays; the rest is unmapped.
void KeepBlocksForDiagnosis(size_t records);

}  // namespace prism::pipeline
