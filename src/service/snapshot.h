// File: service/snapshot.h
// What `llmprism serve` knows at one moment, as an immutable value: jobs with their identity
// across windows and step-time series, findings (merged across overlapping windows), per-GPU step
// timelines of the recent past, and the latest window's report for the dashboard. The analysis
// thread builds a new Snapshot after every window and publishes it with one shared_ptr swap
// (SnapshotHolder); HTTP handlers and /metrics read whichever snapshot they got, never locks held
// by analysis. Times are Unix ns of the records (event time) unless named *_wall_ns.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/ip_addr.h"
#include "diagnosis/rules/bandwidth_rule.h"
#include "output/report.h"

namespace prism::service {

struct StepPoint {
  int64_t start_ns = 0, end_ns = 0;
  double step_s = 0;  // median over the job's GPUs of their step durations
};

struct JobState {
  // "job-<12 hex digits>" (service/stable_ids.h), from the GPUs at first sight; kept across
  // windows and restarts. Stores written before ids were derived hold "job<n>", kept as they are.
  std::string id;
  std::vector<IpAddr> gpus;
  std::vector<std::string> hosts;
  output::ReportLayout layout;
  output::StepTimeSummary step_time;  // latest window
  int64_t first_seen_ns = 0, last_seen_ns = 0;  // window ends
  bool active = true;
  uint64_t windows = 0;
  std::vector<StepPoint> steps;  // by start, the most recent kMaxStepsInMemory
  output::SchedulerRef scheduler;  // --jobs-map: latest window's (not stored in the database)
};

struct StoredFinding {
  int64_t id = 0;  // from the finding's identity and first window (service/stable_ids.h)
  output::ReportFinding finding;  // finding.job is a JobState id
  int64_t first_window_end_ns = 0, last_window_end_ns = 0;
  int windows = 0;  // analysis windows that reported it
};

struct GpuHistory {
  std::string job;
  int stage = -1;
  std::vector<output::ReportStep> steps;  // by start, the recent past (ServiceOptions::history)
};

// An analysis window that was incomplete (records lost on the way), cut short (memory) or not
// analysed (failed).
struct IncompleteWindow {
  int64_t start_ns = 0, end_ns = 0, nominal_start_ns = 0;
  uint64_t records = 0;
  std::map<std::string, uint64_t> lost;  // by reason (service/window_loss.h)
  std::string failed;                    // why it was not analysed; empty if it was
};
inline constexpr size_t kMaxIncompleteWindows = 20;  // the most recent, in snapshots

struct Snapshot {
  uint64_t version = 0;
  int64_t built_wall_ns = 0;
  int64_t window_start_ns = 0, window_end_ns = 0;  // latest window analysed (0: none yet)
  uint64_t window_records = 0;
  double analysis_seconds = 0;
  uint64_t windows_analysed = 0;
  std::vector<JobState> jobs;            // by first sight, then id
  std::vector<StoredFinding> findings;   // by first window, then id (oldest first); the most
                                         // recent kMaxFindings
  std::map<IpAddr, GpuHistory> gpus;
  std::map<std::string, double> switch_bandwidth_relative;  // latest window, from findings
  // Every switch that carried DP data in the latest window (diagnosis::MeasureSwitchDpBandwidth).
  std::vector<diagnosis::SwitchDpBandwidth> switch_dp_bandwidth;
  std::map<std::pair<std::string, std::string>, uint64_t> finding_raises;  // (kind, severity)
  std::shared_ptr<const std::string> dashboard_json;  // BuildHtmlReportData of the latest window
  std::shared_ptr<const output::Report> report;  // the latest window's report (no pp_events)
  uint64_t windows_failed = 0;       // windows that could not be analysed (out of memory)
  uint64_t incomplete_windows = 0;   // windows with loss, cut short, or failed
  std::vector<IncompleteWindow> recent_incomplete;  // the most recent, oldest first
};

inline constexpr size_t kMaxStepsInMemory = 20000;
inline constexpr size_t kMaxFindings = 20000;

class SnapshotHolder {
 public:
  SnapshotHolder() : current_(std::make_shared<const Snapshot>()) {}
  std::shared_ptr<const Snapshot> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return current_;
  }
  void Publish(std::shared_ptr<const Snapshot> s) {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(s);
  }

 private:
  mutable std::mutex mu_;  // held only for the pointer copy (std::atomic<shared_ptr> is C++20
                           // but libstdc++ 12 implements it with a lock anyway)
  std::shared_ptr<const Snapshot> current_;
};

}  // namespace prism::service
