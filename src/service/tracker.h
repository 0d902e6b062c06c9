// File: service/tracker.h
// The incremental analysis of `llmprism serve`: each window is analysed exactly as `analyze`
// analyses one (pipeline/analyze_window.h: Analyze + Diagnose + the window's report), and the Tracker
// carries across windows what a single window cannot know:
//   - job identity: a job keeps its id (service/stable_ids.h: a hash of its GPU set at first
//     sight, so every tracker that sees the job gives it the same id) while its GPU set is the
//     same (or overlaps an active job's by >= 90%, Jaccard: a window may miss a few idle GPUs);
//     a job is "started" when first seen and "ended" when absent for a whole window length, each
//     noted as an info finding (job_started / job_ended);
//   - diagnosis baselines (BaselineStore, keyed by job), so k-sigma compares against history;
//   - a step-time series per job and per-GPU step timelines of the recent past: overlapping
//     windows see a step several times; a step is added once (when it starts after half of the
//     previous step);
//   - findings: overlapping windows report the same problem again; a finding with the same kind,
//     job, GPUs, switches and metric that overlaps (or follows within one step) a known one
//     updates it (time range grows, severity only rises) instead of adding a new one. A new
//     finding's id is a hash of that identity and its first window (service/stable_ids.h).
// Single-threaded (the analysis thread). Sits after output (it builds the per-window Report).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/name_table.h"
#include "core/stats.h"
#include "core/topology.h"
#include "io/jobs_map.h"
#include "diagnosis/diagnose.h"
#include "diagnosis/rules/fabric_contribution.h"
#include "output/report.h"
#include "pipeline/analyze_window.h"
#include "service/snapshot.h"
#include "service/store.h"
#include "service/window_buffer.h"
#include "service/window_loss.h"

namespace prism::service {

struct TrackerOptions {
  int64_t window_ns = 60'000'000'000;
  int64_t step_ns = 10'000'000'000;
  int64_t history_ns = 600'000'000'000;  // per-GPU timelines kept in memory
  pipeline::WindowOptions window;  // analysis and diagnosis options, as for `analyze`
  // --jobs-map: scheduler jobs named on jobs and findings (output/scheduler_jobs.h); null: none.
  std::shared_ptr<const io::JobsMap> jobs_map;
  // A shard's analyser with a fabric stage (serve --fabric-stage, docs/scale-out.md): each
  // window's fabric contribution is kept for the service to publish (TakeFabricContribution),
  // and the window's own switch and link findings, judged from this shard's records only, are
  // left out of the tracker's findings (they still explain its jobs' slow steps and DP groups).
  bool fabric_stage = false;
};

// The fabric stage's verdict on one window (serve --role fabric, service/fabric_stage.h): its
// switch and link findings, judged from the merged contributions of the shards that sent one.
struct FabricVerdict {
  int64_t start_ns = 0, end_ns = 0;
  uint64_t records = 0;  // the merged contribution's
  std::vector<uint64_t> records_by_shard;  // each shard's part's (0: none came)
  std::vector<output::ReportFinding> findings;
  std::vector<int> missing_shards;  // judged without these shards' contributions
  int shards = 0;
  double judge_seconds = 0;
};

class Tracker {
 public:
  Tracker(const TrackerOptions& options, const Topology* topology);

  // State loaded from the store at start.
  void Restore(LoadedState state);

  // Analyses one window (pipeline::AnalyzeWindow, as `analyze` does; the window's segments are
  // released once its table is built); fills `write` with what changed (pointers into this
  // Tracker, valid until the next call). `loss` is what was lost on the way to this window: a
  // telemetry_loss finding and the report's `records_lost`. `report_out`, if not null,
  // receives the window's report with the tracker's job ids. Running out of memory inside the
  // window (std::bad_alloc) keeps nothing of it: kResourceExhausted, the window noted as not
  // analysed (a finding in `write`), and the Tracker ready for the next window.
  Status AnalyzeWindow(Window window, const PointTable& points, const WindowLoss& loss,
                       Store::WindowWrite* write, output::Report* report_out = nullptr);

  // With TrackerOptions::fabric_stage: the contribution of the window AnalyzeWindow analysed last
  // (its jobs named by this tracker's ids), moved out; nullopt when that window failed.
  // The records the window AnalyzeWindow analysed last held (less those left to another holder).
  uint64_t last_window_records() const { return window_records_; }
  std::optional<diagnosis::FabricContribution> TakeFabricContribution() {
    return std::exchange(fabric_contribution_, std::nullopt);
  }

  // serve --role fabric: the fabric stage's findings of one window merged with earlier windows'
  // as AnalyzeWindow merges a window's (same ids as one serve's), and a window judged without
  // some shards' contributions noted as a telemetry_loss finding naming them.
  void AddFabricWindow(const FabricVerdict& verdict, Store::WindowWrite* write);

  // What the store may need to write again after a failed write (null when gone since).
  const JobState* FindJob(const std::string& id) const;
  const StoredFinding* FindFinding(int64_t id) const;

  std::shared_ptr<const Snapshot> BuildSnapshot() const;

  const diagnosis::BaselineStore& baselines() const { return baselines_; }

 private:
  void NoteIncomplete(const Window& window, const WindowLoss& loss, const std::string& failed,
                      Store::WindowWrite* write, output::Report* report);
  std::string AssignJob(const output::ReportJob& job, bool* is_new);
  std::string NewJobId(const std::vector<IpAddr>& gpus) const;
  StoredFinding* AddFinding(output::ReportFinding f, int64_t window_end_ns, bool mergeable);
  // The open finding `f` continues (same identity, overlapping or within a step), updated; null
  // if none.
  StoredFinding* MergeIntoOpen(const std::string& key, const output::ReportFinding& f,
                               int64_t window_end_ns);
  void DropOldestFindings();  // beyond kMaxFindings, by first window

  // AnalyzeWindow's stages, in the order it runs them.
  // What one window's records give, before any of the tracker's state changes (so that running
  // out of memory in the middle leaves the tracker as it was).
  struct WindowAnalysis {
    output::Report report;
    diagnosis::BaselineStore baselines;  // the tracker's, updated by this window
    std::vector<diagnosis::SwitchDpBandwidth> switch_dp_bandwidth;
    diagnosis::FabricContribution fabric;  // with options_.fabric_stage
    std::vector<std::vector<IpAddr>> fabric_job_gpus;
  };
  // The contribution's jobs by the tracker's ids (MatchJobs has named the report's jobs).
  void NameFabricJobs(const output::Report& report, WindowAnalysis* analysis);
  // The window through pipeline::AnalyzeWindow; releases the window's segments once its table is
  // built. May throw std::bad_alloc.
  WindowAnalysis AnalyseRecords(Window& window, const PointTable& points) const;
  // Job identity across windows: gives each of the report's jobs the tracker's id (new, matched
  // or resumed; job_started findings), ends jobs gone for a window (job_ended), renames the
  // report's references and names scheduler jobs. Returns the ids of the jobs that changed.
  std::vector<std::string> MatchJobs(int64_t window_start_ns, int64_t window_end_ns,
                                     output::Report* report, Store::WindowWrite* write);
  // Shards taken by lease: the active jobs with a GPU whose shard was lost (Window::
  // left_to_another_holder) are no longer this analyser's: inactive, without a job_ended finding.
  // Returns their ids.
  std::vector<std::string> HandOverJobs(
      const std::function<bool(const IpAddr&)>& left_to_another_holder);
  void EndUnseenJobs(const std::set<std::string>& seen, int64_t window_end_ns,
                     Store::WindowWrite* write, std::vector<std::string>* changed);
  // Each job's step-time series: the window's new steps appended (and queued for the store).
  void RecordJobSteps(const output::Report& report, Store::WindowWrite* write);
  // Per-GPU timelines of the recent past (options_.history_ns), without pipeline events.
  void RecordGpuHistory(const output::Report& report, int64_t window_end_ns);
  // The window's findings merged with those of earlier windows; the bandwidth gauges' switches.
  void MergeFindings(const output::Report& report, int64_t window_end_ns,
                     Store::WindowWrite* write);
  // The dashboard's data and the report /api/v1/report serves (without pipeline events).
  void KeepLatestReport(output::Report report, output::Report* report_out);
  void CountRaise(const output::ReportFinding& f) {
    ++finding_raises_[{diagnosis::FindingKindName(f.kind), diagnosis::SeverityName(f.severity)}];
  }

  TrackerOptions options_;
  const Topology* topology_;
  diagnosis::BaselineStore baselines_;
  std::map<std::string, JobState> jobs_;
  std::map<std::vector<IpAddr>, std::string> job_by_gpus_;
  std::map<int64_t, StoredFinding> findings_;  // by id
  // (first window end, id) of every finding in findings_: oldest first, as ids no longer are.
  std::set<std::pair<int64_t, int64_t>> finding_order_;
  std::map<std::string, int64_t> open_findings_;  // merge key -> id
  std::map<IpAddr, GpuHistory> gpus_;
  std::map<std::string, double> switch_bw_;
  std::vector<diagnosis::SwitchDpBandwidth> switch_dp_bw_;
  std::map<std::pair<std::string, std::string>, uint64_t> finding_raises_;
  std::shared_ptr<const std::string> dashboard_json_;
  std::shared_ptr<const output::Report> latest_report_;
  uint64_t version_ = 0;
  uint64_t windows_ = 0;
  int64_t window_start_ns_ = 0, window_end_ns_ = 0;
  uint64_t window_records_ = 0;
  double analysis_seconds_ = 0;
  uint64_t windows_failed_ = 0, incomplete_windows_ = 0;
  std::deque<IncompleteWindow> recent_incomplete_;
  std::optional<diagnosis::FabricContribution> fabric_contribution_;
};

}  // namespace prism::service
