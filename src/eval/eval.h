// File: eval/eval.h
// Scoring an analysis report (docs/report-schema.md) against the simulator's ground truth
// (docs/truth-schema.md). It sits beside sim at the end of the pipeline and is used by
// `llmprism eval`. Both inputs are plain JSON documents; Evaluate() validates the keys it needs
// and returns an Error naming the file and the missing or mistyped key, so no nlohmann exception
// leaves this module.
//
// Metrics, all fractions in [0, 1] (definitions in detail in eval.cc):
//   jobs_exact_fraction    truth jobs whose GPU set equals some report job's GPU set
//   jobs_ari               adjusted Rand index of the report's partition of the truth GPUs
//   pairs_accuracy         truth pairs whose report pair carries the same label (dp, pp, tp)
//   pairs_extra_labelled   report pairs labelled dp / pp / tp that the truth does not list
//   layout_exact_fraction  truth jobs whose matched report job has the same dp, pp, tp, stages
//   step_error_p50/p99/max |report - truth| / truth step duration over matched steps
//   faults_*               precision / recall / localisation / cause of warning+ findings
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace prism::eval {

struct EvalOptions {
  // A finding matches a fault when their time spans overlap after widening the fault by this
  // much on each side: detectors report on step boundaries, which lag the fault's onset.
  int64_t time_slack_ns = 5'000'000'000;
  // A straggler finding localises its GPU only if it names at most this many GPUs. Switches see
  // inter-host traffic only, so the network cannot tell apart the GPUs of one tensor-parallel
  // group (they talk over NVLink inside a host): naming the whole TP group (8) is the best a
  // flow-based tool can do, so that still counts as localised.
  size_t max_localized_gpus = 8;
};

struct JobDetail {
  std::string truth_id;
  std::string layout;     // "DPxPPxTP" of the truth job, e.g. "16x8x8"
  size_t truth_gpus = 0;
  std::string report_id;  // report job with the largest GPU overlap; empty if none overlaps
  size_t report_gpus = 0;
  size_t overlap_gpus = 0;
  bool exact = false;     // GPU sets equal
  bool dp_match = false;
  bool pp_match = false;
  bool tp_match = false;
  bool order_match = false;   // same number of stages, stage i has the same GPU set
  bool layout_exact = false;  // all four above
  size_t pairs_total = 0;
  size_t pairs_correct = 0;
  size_t steps_total = 0;
  size_t steps_matched = 0;
};

struct LayoutDetail {
  std::string layout;  // "DPxPPxTP"; "unknown" for truth pairs naming no truth job
  size_t jobs = 0;
  size_t jobs_layout_exact = 0;
  size_t pairs_total = 0;
  size_t pairs_correct = 0;
};

struct FaultDetail {
  std::string id;
  std::string kind;
  std::string cause;
  std::vector<size_t> matching_findings;  // indices into report "findings", ascending
  std::optional<size_t> localizing_finding;  // first matching finding that localises the fault
  std::optional<size_t> cause_finding;       // first localising finding with the right cause
};

struct EvalCounts {
  size_t truth_jobs = 0;
  size_t report_jobs = 0;
  size_t truth_gpus = 0;
  size_t jobs_exact = 0;
  size_t layouts_exact = 0;
  size_t truth_pairs = 0;
  size_t pairs_correct = 0;
  size_t pairs_wrong_label = 0;
  size_t pairs_missing = 0;  // truth pair absent from the report
  size_t pairs_extra = 0;    // report pair absent from the truth (not part of pairs_accuracy)
  // Extra report pairs labelled dp, pp or tp: a parallelism claimed where the job had none (e.g.
  // a one-off or storage transfer called DP). An error; "unknown" extras are not.
  size_t pairs_extra_labelled = 0;
  size_t truth_steps = 0;    // truth steps with a positive duration
  size_t steps_matched = 0;
  size_t steps_invalid = 0;  // truth steps with end_ns <= start_ns, skipped
  size_t findings = 0;       // all report findings
  size_t findings_scored = 0;    // severity warning or critical
  size_t findings_matching = 0;  // scored findings matching at least one fault
  // Scored findings matching no fault but a link the simulated fabric congested by itself (the
  // truth's fabric_events): right about the simulation, yet nothing was injected there. Neither
  // true nor false: left out of precision.
  size_t findings_on_fabric_events = 0;
  size_t faults = 0;
  size_t faults_matched = 0;
  size_t faults_localized = 0;
  size_t faults_cause = 0;
};

struct EvalResult {
  double jobs_exact_fraction = 1.0;
  double jobs_ari = 1.0;
  double pairs_accuracy = 1.0;
  double layout_exact_fraction = 1.0;
  // Empty when no truth step is matched (the error is then undefined; steps_matched_fraction
  // tells why). With no truth steps at all they are 0.
  std::optional<double> step_error_p50;
  std::optional<double> step_error_p99;
  std::optional<double> step_error_max;
  double steps_matched_fraction = 1.0;
  double faults_precision = 1.0;
  double faults_recall = 1.0;
  double faults_localized_fraction = 1.0;
  double faults_cause_fraction = 1.0;

  EvalCounts counts;
  std::vector<JobDetail> jobs;       // in truth order
  std::vector<LayoutDetail> layouts; // sorted by layout string
  std::vector<FaultDetail> faults;   // in truth order
  std::vector<size_t> false_positive_findings;  // scored findings matching no fault
};

// Scores `report` against `truth`. Errors (kInvalidArgument) name "truth" or "report" and the
// JSON path of the missing or mistyped key, e.g. "report: jobs[2].layout: missing key 'stages'".
StatusOr<EvalResult> Evaluate(const nlohmann::json& truth, const nlohmann::json& report,
                              const EvalOptions& options = {});

// Reads and parses a JSON file. kNotFound if it cannot be opened; kInvalidArgument with the
// file name, line, column and byte offset if it is not valid JSON.
StatusOr<nlohmann::json> LoadJsonFile(const std::string& path);

// LoadJsonFile both, then Evaluate; error messages name the files instead of "truth"/"report".
StatusOr<EvalResult> EvaluateFiles(const std::string& truth_path, const std::string& report_path,
                                   const EvalOptions& options = {});

// Adjusted Rand index (Hubert & Arabie 1985) of two labelings of the same items, computed from
// their contingency table. 1 for identical partitions (also when both are all singletons or one
// block), about 0 for chance agreement, may be negative. Requires equal lengths.
double AdjustedRandIndex(std::span<const int64_t> labels_a, std::span<const int64_t> labels_b);

// Nearest-rank percentile of ascending `sorted` values: the value at rank ceil(p/100 * n)
// (1-based, at least 1). `sorted` must not be empty; p in [0, 100].
double NearestRankPercentile(std::span<const double> sorted, double p);

// The `eval --json` object: the headline metrics at the top level, the rest under "details".
nlohmann::json EvalResultToJson(const EvalResult& result);

// A readable multi-line table of the same content.
std::string FormatEvalText(const EvalResult& result);

}  // namespace prism::eval
