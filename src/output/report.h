// File: output/report.h
// The report of one `llmprism analyze` run: every analysis window's jobs, pair labels, timelines and
// findings merged into one document with GPUs named by address, plus the input counters. Analysis
// and diagnosis work window by window on dense endpoint ids; ReportBuilder turns each window's
// results into addresses and merges them; report_json.h and text_summary.h render the finished
// Report (docs/report-schema.md). Sits after diagnosis, before apps.
//
// Merging across windows (the report covers the whole input):
//   - a job keeps its identity when its GPU set equals a job of an earlier window; layout and hosts
//     come from the latest window where the layout was consistent (else the latest window);
//   - timelines are keyed by (GPU, job): steps of later windows are appended, sorted by start;
//   - pairs are keyed by (a, b): the latest window's label wins, except that "unknown" never
//     replaces a known label (a window that saw too little of a pair should not erase what another
//     one established);
//   - findings are appended;
//   - job ids are assigned once, in Build(): "job<k>" with k in order of each job's lowest GPU
//     address (then earliest window), so a one-window report numbers jobs as Analyze() does.
// "Latest" is by window start, so windows may be added in any order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/endpoint_context.h"
#include "core/ip_addr.h"
#include "core/stats.h"
#include "diagnosis/finding.h"
#include "flow/flow_table.h"

namespace prism::output {

struct ReportPpEvent {
  int64_t start_ns = 0, end_ns = 0;
  IpAddr peer;
  bool forward = true;   // activation (to the later stage) or gradient (to the earlier)
  bool outgoing = true;  // sent by the timeline's GPU
};

struct ReportStep {
  int64_t start_ns = 0, end_ns = 0;
  int64_t dp_start_ns = 0, dp_end_ns = 0;
  int64_t compute_ns = 0, bubble_ns = 0;
  std::vector<ReportPpEvent> pp_events;
};

struct ReportLayout {
  int dp = 0, pp = 0, tp = 0, microbatches = 0;
  bool consistent = false;
  std::vector<std::vector<IpAddr>> stages;  // stage 0 first; each stage in address order
};

// Over every (GPU, step) of the job's timelines; `steps` is the most steps any one GPU has.
struct StepTimeSummary {
  double median_s = 0, p99_s = 0;
  size_t steps = 0;
};

// The scheduler job (--jobs-map, io/jobs_map.h) a recognised job runs as; empty id: none known.
struct SchedulerRef {
  std::string job_id, user, name;
  bool empty() const { return job_id.empty(); }
  bool operator==(const SchedulerRef&) const = default;
};

struct ReportJob {
  std::string id;
  std::vector<IpAddr> gpus;             // address order
  std::vector<std::string> hosts;       // sorted
  std::map<IpAddr, std::string> host_of;  // GPU -> host name (from the topology; else its address)
  ReportLayout layout;
  StepTimeSummary step_time;
  size_t windows = 0;  // analysis windows the job was recognised in
  SchedulerRef scheduler;  // with --jobs-map: the scheduler job holding most of its GPUs
};

struct ReportPair {
  IpAddr a, b;  // a < b
  std::string job;  // empty when the pair belongs to no job
  analysis::PairLabel label = analysis::PairLabel::kUnknown;
  analysis::PairEvidence evidence;
};

struct ReportTimeline {
  IpAddr gpu;
  std::string job;
  int stage = -1;
  std::vector<ReportStep> steps;  // by start
};

struct ReportFinding {
  diagnosis::FindingKind kind = diagnosis::FindingKind::kSlowStep;
  diagnosis::Severity severity = diagnosis::Severity::kInfo;
  std::string job;  // empty for none
  std::vector<IpAddr> gpus;            // address order
  std::vector<std::string> switches;   // sorted
  std::vector<std::string> hosts;      // sorted; counters mode names servers, not GPUs
  int64_t start_ns = 0, end_ns = 0;
  std::string metric;
  double value = 0, baseline = 0, sigma = 0;
  int units = 0;
  diagnosis::Cause cause = diagnosis::Cause::kUnknown;
  std::string summary;
  SchedulerRef scheduler;  // with --jobs-map: its job's scheduler job (output/scheduler_jobs.h)
};

// A window's finding as the report shows it (GPUs by address, sorted; switches sorted), but for
// its job, which the caller names (the report by its job numbering).
ReportFinding ConvertFinding(const EndpointTable& endpoints, const diagnosis::Finding& f);

struct ReportWindow {
  int64_t start_ns = 0, end_ns = 0;
  int64_t records_start_ns = 0, records_end_ns = 0;  // earliest start, latest end of its records
  uint64_t records = 0;
  size_t jobs = 0;
  size_t findings = 0;
  // serve only (empty / 0 for analyze): records lost before analysis while this window's data
  // arrived, by reason (an incomplete window); the configured start when the window was cut
  // shorter by the memory budget; why the window could not be analysed at all.
  std::map<std::string, uint64_t> records_lost;
  int64_t nominal_start_ns = 0;
  std::string failed;
};

struct ReportSource {
  std::string path;
  std::string format;  // "csv", "ipfix"
  uint64_t records = 0;
};

// Counters mode (docs/counters.md): what port byte counters show, beside the common jobs and
// findings. Servers are named by the port topology; times are ns like everything else.
struct ReportCountersServer {
  std::string name;
  std::string job;  // empty: in no job
  double mean_gbps = 0, period_s = 0, period_strength = 0, job_correlation = 0;
  std::vector<std::string> nics;  // interface names, sorted
  std::vector<double> nic_gbps;   // same order
};

struct ReportCountersJob {
  std::string id;
  double period_s = 0, period_strength = 0;
  double server_gbps = 0;                 // mean rate per server, all NICs
  std::vector<std::string> nic_names;     // the per-NIC rate signature: share of bytes per NIC
  std::vector<double> signature;
  std::vector<std::pair<int64_t, int64_t>> iterations;  // [start_ns, end_ns), by start
  // What the counters can show of one iteration (counters/slow_episodes.h): one boundary's blur,
  // a duration's 1-sigma uncertainty, the smallest excess reported as slow; and iterations found
  // inside intervals whose boundary the counters did not show.
  double boundary_s = 0, uncertainty_s = 0, resolution_limit_s = 0;
  size_t merged_iterations = 0;
  // The job's summed traffic for plots: traffic_gbps[i] covers plot_start_ns + i * plot_bin_s.
  int64_t plot_start_ns = 0;
  double plot_bin_s = 0;
  std::vector<float> traffic_gbps;
};

struct ReportCounters {
  double poll_s = 0, poll_p90_s = 0, refresh_s = 0, stale_zero_fraction = 0, bin_s = 0;
  uint64_t ports = 0, polls = 0, bytes = 0;
  std::vector<ReportCountersServer> servers;  // by name
  std::vector<ReportCountersJob> jobs;        // same order as Report::jobs
};

struct Report {
  std::string mode = "flows";           // "flows" | "counters"
  ReportCounters counters;              // counters mode only
  double window_s = 0;                  // configured window length
  int64_t start_ns = 0, end_ns = 0;     // first window start, last window end
  std::vector<ReportWindow> windows;    // by start
  std::vector<ReportSource> sources;    // in the order given
  std::vector<ReportJob> jobs;          // by id number (job0, job1, ...)
  std::vector<ReportPair> pairs;        // by (a, b)
  std::vector<ReportTimeline> timelines;  // by (gpu, job number)
  std::vector<ReportFinding> findings;  // by (start, kind, job, gpus, switches, metric, end)
  Stats input;
};

// What one analysis window hands to the builder. Pointers are borrowed for the AddWindow() call only.
struct WindowInput {
  int64_t start_ns = 0, end_ns = 0;
  // Required: endpoint id -> address. The report keeps nothing of the window's records but
  // their count and span (below), so SetFlows() may be followed by freeing the columns, as long
  // as the endpoint table lives on (analyze frees them before the report's copy of the timelines).
  const EndpointTable* endpoints = nullptr;
  uint64_t records = 0;
  int64_t records_start_ns = 0, records_end_ns = 0;  // start_ns when there is no record
  const analysis::EndpointContext* context = nullptr;       // optional: GPU -> host name
  const analysis::AnalysisResults* results = nullptr;       // required
  const std::vector<diagnosis::Finding>* findings = nullptr;  // optional

  // Endpoints, record count and span from the window's table (start_ns must be set).
  void SetFlows(const flow::FlowTable& flows) {
    endpoints = &flows.endpoints();
    records = flows.size();
    records_start_ns = flows.empty() ? start_ns : flows.min_start_ns();
    records_end_ns = flows.empty() ? start_ns : flows.max_end_ns();
  }
};

class ReportBuilder {
 public:
  explicit ReportBuilder(double window_s = 60) : window_s_(window_s) {}

  // Windows may come in any order; Build() sorts them.
  void AddWindow(const WindowInput& window);
  void AddSource(std::string path, std::string format, uint64_t records);
  // The counters shown under "input" (replaces any earlier call).
  void SetInputStats(const Stats& stats) { stats_ = stats; }

  Report Build() const;

 private:
  struct JobAcc {
    std::vector<IpAddr> gpus;  // address order: the identity key
    std::vector<std::string> hosts;
    std::map<IpAddr, std::string> host_of;
    ReportLayout layout;
    size_t windows = 0;
    int64_t first_start_ns = 0;   // earliest window the job was seen in
    int64_t layout_start_ns = 0;  // window the layout and hosts come from
  };
  struct PairAcc {
    size_t job = kNoJob;
    analysis::PairLabel label = analysis::PairLabel::kUnknown;
    analysis::PairEvidence evidence;
    int64_t start_ns = 0;  // window the label comes from
  };
  struct TimelineAcc {
    int stage = -1;
    int64_t stage_start_ns = INT64_MIN;
    std::vector<ReportStep> steps;
  };
  struct FindingAcc {
    size_t job = kNoJob;
    ReportFinding finding;  // job filled in Build()
  };
  static constexpr size_t kNoJob = static_cast<size_t>(-1);
  // Build()'s stages. Job numbers: by lowest GPU address, then first window, then GPU set.
  struct JobNumbering {
    std::vector<size_t> order;     // job number -> index in jobs_
    std::vector<size_t> rank;      // index in jobs_ -> job number
    std::vector<std::string> ids;  // index in jobs_ -> "job<number>"
    std::string IdOf(size_t j) const { return j == kNoJob ? std::string() : ids[j]; }
  };
  // AddWindow()'s parts. MergeJobs maps a window's job index to an index in jobs_.
  std::vector<size_t> MergeJobs(const WindowInput& w);
  // The index in jobs_ of a window's job `j` (kNoJob for -1 or out of range).
  static size_t MergedJob(const std::vector<size_t>& job_map, int j);
  void MergePairs(const WindowInput& w, const std::vector<size_t>& job_map);
  void MergeTimelines(const WindowInput& w, const std::vector<size_t>& job_map);
  void MergeFindings(const WindowInput& w, const std::vector<size_t>& job_map);
  JobNumbering NumberJobs() const;
  // Timelines by (GPU, job number), each step once; fills the jobs' step-time summaries.
  void AddTimelines(const JobNumbering& jobs, Report* report) const;
  // Findings in a stable order that does not depend on the order windows were added.
  void AddFindings(const JobNumbering& jobs, Report* report) const;

  double window_s_;
  std::vector<JobAcc> jobs_;
  std::map<std::vector<IpAddr>, size_t> job_by_gpus_;
  std::map<std::pair<IpAddr, IpAddr>, PairAcc> pairs_;
  std::map<std::pair<IpAddr, size_t>, TimelineAcc> timelines_;  // (gpu, job index)
  std::vector<FindingAcc> findings_;
  std::vector<ReportWindow> windows_;
  std::vector<ReportSource> sources_;
  Stats stats_;
};

// Linear-interpolation quantile (q in [0, 1]) of unsorted values; 0 when empty.
double Quantile(std::vector<double> values, double q);

}  // namespace prism::output
