// File: counters/counters_analysis.h
// Counters mode, analysis and diagnosis: from per-port byte deltas to jobs, iterations and
// findings, with no flow records at all.
//   1. resample every port onto one grid (counters/resample.h) and sum each server's NICs;
//   2. per server: mean rate, per-NIC rate signature, step period (counters/period.h);
//   3. group periodic servers into jobs: average-linkage clustering on the zero-lag correlation of
//      their detrended rates (synchronous training moves every member in phase), merging only
//      servers whose periods agree up to a harmonic and whose NIC signatures match;
//   4. per job: the period of the summed traffic, a one-iteration template folded at that period,
//      iteration boundaries tracked by normalised cross-correlation with the template;
//   5. findings (counters/slow_episodes.h): iterations are judged against the job's resolution
//      limit (what the poll and refresh periods can show); slow ones become episodes (a job-wide
//      stall when the span is mostly silence), a regular cadence of them the job's rhythm (info),
//      severity by lost GPU time; a server out of step is one whose phase lag against the rest
//      of its job changes for several chunks of iterations, on each of its NICs.
// Sits after counters/port_counters.h and resample.h; output/counters_report.h turns the result
// into the common report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/stats.h"
#include "counters/period.h"
#include "counters/port_counters.h"
#include "counters/resample.h"
#include "counters/slow_episodes.h"
#include "diagnosis/finding.h"

namespace prism::counters {

struct CountersOptions {
  double bin_s = 0;         // 0: refresh / 4, clamped to [0.05, 0.5]
  double refresh_s = 0;     // 0: measured (ProfilePolls)
  double max_gap_s = 5;     // longer poll gaps are missing data
  double min_server_gbps = 0.5;  // a server below this mean rate is idle
  double join_correlation = 0.5; // average-linkage threshold for one job
  double max_phase_lag_s = 6;   // phase offsets tried when correlating two servers (<= period/2)
  double signature_l1 = 0.5;     // largest L1 distance of NIC-share vectors within a job
  double k = 3;                  // k-sigma for findings
  double match_threshold = 0.3;  // template correlation that counts as an iteration
  double plot_bin_s = 0;         // traffic series in the report: 0 = max(bin, period / 8)
  PeriodOptions period;
  EpisodeOptions episodes;       // its k is set from k
  ImpactOptions impact;          // lost GPU time -> severity
};

struct ServerResult {
  std::string name;
  std::vector<std::string> nics;     // interface names (or switch:port), sorted
  std::vector<std::string> nic_ips;  // same order; may be empty strings
  std::vector<double> nic_gbps;      // mean in+out rate per NIC over valid bins
  double mean_gbps = 0;              // all NICs
  PeriodEstimate period;
  int job = -1;
  double job_correlation = 0;  // mean correlation with the other members
};

struct Iteration {
  int64_t start_ms = 0, end_ms = 0;
  double score = 0;   // template correlation at the start boundary
  bool gap = false;   // overlaps missing data: not used for findings
};

struct CountersJob {
  std::vector<int> servers;  // indices into CountersResult::servers, by name
  double period_s = 0, strength = 0;
  double step_median_s = 0, step_p99_s = 0;
  std::vector<Iteration> iterations;
  ResolutionLimit resolution;          // what the counters can show of one iteration
  size_t merged_iterations = 0;        // iterations inside intervals whose boundary was not seen
  std::vector<std::string> nic_names;  // signature order
  std::vector<double> signature;       // share of the job's bytes per NIC name, sums to 1
  double server_gbps = 0;              // mean rate per server
  int64_t start_ms = 0, end_ms = 0;    // first and last iteration boundary
  double plot_bin_s = 0;
  int64_t plot_start_ms = 0;
  std::vector<float> traffic_gbps;     // summed over the job's servers, per plot bin
};

struct CountersFinding {
  // kSlowIteration (an episode) | kJobStall | kIterationRhythm | kServerOutOfStep
  diagnosis::FindingKind kind = diagnosis::FindingKind::kSlowIteration;
  diagnosis::Severity severity = diagnosis::Severity::kWarning;  // the flow mode's scale
  int job = -1;
  std::vector<int> servers;
  int64_t start_ms = 0, end_ms = 0;
  std::string metric;
  double value = 0, baseline = 0, sigma = 0;
  int units = 0;
  double lost_gpu_s = 0;  // servers x GPUs per server x seconds lost
  std::string summary;
};

struct CountersResult {
  Grid grid;
  PollProfile polls;
  std::vector<ServerResult> servers;  // by name
  std::vector<CountersJob> jobs;      // by first server name
  std::vector<CountersFinding> findings;  // by start
  uint64_t bytes = 0;                 // spread onto the grid
};

// `topology` may be empty: each port is then its own "server" named switch:port.
CountersResult AnalyzeCounters(const CountersData& data, const PortTopology& topology,
                               const CountersOptions& options, Stats* stats);

}  // namespace prism::counters
