// File: diagnosis/diagnose.h
// Diagnosis (docs/design.md): k-sigma rules over step durations, per-GPU compute gaps, DP-group
// durations and per-switch / per-link bandwidth, with a minimum effect size and persistence so that
// thousands of healthy GPU-steps do not raise alerts by chance. Rules and defaults:
// docs/diagnosis.md.
#pragma once

#include <functional>

#include <map>
#include <string>
#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/endpoint_context.h"
#include "core/name_table.h"
#include "diagnosis/finding.h"
#include "flow/flow_table.h"

namespace prism::diagnosis {

struct DiagnosisOptions {
  double k = 3.0;                 // sigma multiplier
  double min_step_effect = 0.10;  // a slow step is at least 10% over baseline (ECMP contention
                                  // alone moves steps by up to ~9% on a shared fabric)
  double min_gpu_effect = 0.10;   // a straggler's compute gaps are at least 10% over its peers
  double min_bw_drop = 0.50;      // a degraded switch / link loses at least half its bandwidth
                                  // (ECMP collisions alone cost a link up to 40%)
  int persist_units = 2;          // consecutive steps / bins before a warning
  int64_t bw_bin_ns = 5'000'000'000;
  // Threads for the bandwidth rule's passes over the records (the findings are the same for any).
  int threads = 1;
};

// Healthy baselines carried across windows, keyed by job (its lowest GPU address).
struct Baseline {
  double median = 0, sigma = 0;
  int samples = 0;
};
using BaselineStore = std::map<std::string, Baseline>;

struct NetworkFindings;  // rules/bandwidth_rule.h

// Hands over the network rule's findings (FindNetworkDegradation) when the rule runs elsewhere,
// beside the analysis (pipeline/network_rule_beside.h): called once, when they are needed.
using TakeNetworkFindings = std::function<NetworkFindings()>;

// Every rule's findings, sorted by start. Without `take_network` the network rule runs here. With
// it, the per-job rules run first and the network's findings are taken after them: while the rule
// ends on its thread, this one is busy, not waiting.
std::vector<Finding> Diagnose(const flow::FlowTable& flows, const PointTable& points,
                              const analysis::EndpointContext& ctx,
                              const analysis::AnalysisResults& results,
                              const DiagnosisOptions& options, BaselineStore* baselines,
                              const TakeNetworkFindings& take_network = nullptr);

}  // namespace prism::diagnosis
