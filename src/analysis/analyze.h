// File: analysis/analyze.h
// The whole analysis of one window (docs/design.md, Job recognition to Timelines): jobs, pair
// labels, layouts, timelines. A pure function of the window's records and the topology; batch and
// service share it.
#pragma once

#include <functional>

#include "analysis/analysis_results.h"
#include "analysis/classify/pair_classifier.h"
#include "analysis/classify/step_order.h"
#include "analysis/classify/tensor_parallel.h"
#include "analysis/endpoint_context.h"
#include "analysis/jobs/job_recognition.h"
#include "analysis/stage_timer.h"
#include "analysis/timeline/timeline_builder.h"
#include "flow/flow_table.h"

namespace prism::analysis {

struct AnalysisOptions {
  JobRecognitionOptions jobs;
  PairClassifierOptions pairs;
  StepOrderOptions step_order;
  TensorParallelOptions tensor_parallel;
  TimelineOptions timelines;
  int threads = 1;  // independent pairs and jobs in parallel
  // Called once every pair's transfers are built, when no later stage reads the QP and sampling
  // columns: the owner of the table may release them (FlowTable::ReleaseTransferColumns), 8 bytes
  // per record less at the peak of the analysis.
  std::function<void()> on_transfers_built;
  // Called once the pairs' labels are final, before DP steps and timelines: `results` then holds
  // the jobs (without their layouts), job_of and the pairs, labelled. What needs no more than that
  // (the diagnosis's network rule) may start from a copy and run beside the rest.
  std::function<void(const AnalysisResults& results)> on_labels_final;
};

struct AnalysisStats {
  // Transfers of all pairs (pair classification) and of all DP groups (steps), and the points
  // fed to BOCD: by the pairs' classification (the pairs whose idle gaps alone cut no regular
  // steps) and by the DP groups' steps (BOCD runs on each group's transfers: dp_group_transfers).
  uint64_t pair_transfers = 0;
  uint64_t pair_bocd_points = 0;
  uint64_t dp_group_transfers = 0;
  // Filled when `timings` is set (analyze --timings).
  bool timings = false;
  std::vector<StageTime> stages;
};

// `flows` must be sorted by start (FlowTable::SortByStart).
// `window_end_ns` bounds the data: the last step activity too close to it is not trusted.
AnalysisResults Analyze(const flow::FlowTable& flows, const EndpointContext& ctx,
                        int64_t window_end_ns, const AnalysisOptions& options,
                        AnalysisStats* stats);

}  // namespace prism::analysis
