#include "service/tracker.h"

#include <algorithm>
#include <chrono>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "flow/flow_table.h"
#include "output/html_report.h"
#include "output/report.h"
#include "output/scheduler_jobs.h"
#include "pipeline/analyze_window.h"
#include "service/stable_ids.h"

namespace prism::service {

namespace {

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Jaccard(const std::vector<IpAddr>& a, const std::vector<IpAddr>& b) {
  // Both in address order.
  size_t i = 0, j = 0, both = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) {
      ++both, ++i, ++j;
    } else if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  const size_t any = a.size() + b.size() - both;
  return any == 0 ? 0 : static_cast<double>(both) / static_cast<double>(any);
}

std::string MergeKey(const output::ReportFinding& f) {
  std::string k = fmt::format("{}|{}|{}|", diagnosis::FindingKindName(f.kind), f.job, f.metric);
  for (const IpAddr& ip : f.gpus) k += ip.ToString() + ",";
  k += "|";
  for (const std::string& s : f.switches) k += s + ",";
  return k;
}

// The window's job ids ("job<n>", job_recognition.h) named in a finding's text, replaced by the
// tracker's: a summary says which job it is about, and must name the job the finding carries.
std::string RenameJobsInText(const std::string& text,
                             const std::map<std::string, std::string>& rename) {
  static const std::regex kWindowJobId(R"(\bjob[0-9]+\b)");
  std::string out;
  auto copied = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), kWindowJobId), end; it != end; ++it) {
    out.append(copied, (*it)[0].first);
    auto r = rename.find(it->str());
    out += r == rename.end() ? it->str() : r->second;
    copied = (*it)[0].second;
  }
  out.append(copied, text.cend());
  return out;
}

// Step boundaries of a job from its GPUs' timelines: the GPU with the most steps gives the
// reference steps; each step's time is the median duration of the GPUs' steps whose midpoint
// falls in it.
std::vector<StepPoint> JobSteps(const output::Report& report, const std::string& job) {
  const output::ReportTimeline* ref = nullptr;
  std::vector<const output::ReportTimeline*> tls;
  for (const output::ReportTimeline& t : report.timelines) {
    if (t.job != job) continue;
    tls.push_back(&t);
    if (ref == nullptr || t.steps.size() > ref->steps.size()) ref = &t;
  }
  std::vector<StepPoint> out;
  if (ref == nullptr) return out;
  std::vector<std::vector<double>> durations(ref->steps.size());
  for (const output::ReportTimeline* t : tls) {
    size_t k = 0;
    for (const output::ReportStep& s : t->steps) {
      const int64_t mid = s.start_ns + (s.end_ns - s.start_ns) / 2;
      while (k < ref->steps.size() && ref->steps[k].end_ns < mid) ++k;
      if (k == ref->steps.size()) break;
      if (ref->steps[k].start_ns <= mid) {
        durations[k].push_back(static_cast<double>(s.end_ns - s.start_ns) / 1e9);
      }
    }
  }
  for (size_t k = 0; k < ref->steps.size(); ++k) {
    if (durations[k].empty()) continue;
    out.push_back({ref->steps[k].start_ns, ref->steps[k].end_ns,
                   output::Quantile(durations[k], 0.5)});
  }
  return out;
}

// Appends the steps that start after half of the last kept one (overlapping windows repeat
// steps); returns how many were added.
template <typename Step, typename Start, typename End>
size_t AppendNewSteps(std::vector<Step>* kept, const std::vector<Step>& fresh, Start start,
                      End end) {
  size_t added = 0;
  for (const Step& s : fresh) {
    if (!kept->empty()) {
      const Step& last = kept->back();
      if (start(s) <= start(last) + (end(last) - start(last)) / 2) continue;
    }
    kept->push_back(s);
    ++added;
  }
  return added;
}

}  // namespace

Tracker::Tracker(const TrackerOptions& options, const Topology* topology)
    : options_(options), topology_(topology) {}

void Tracker::Restore(LoadedState state) {
  baselines_ = std::move(state.baselines);
  for (JobState& j : state.jobs) {
    job_by_gpus_[j.gpus] = j.id;
    std::string id = j.id;
    jobs_[id] = std::move(j);
  }
  for (StoredFinding& f : state.findings) {
    CountRaise(f.finding);
    if (!diagnosis::IsJobEvent(f.finding.kind)) {
      open_findings_[MergeKey(f.finding)] = f.id;
    }
    finding_order_.emplace(f.first_window_end_ns, f.id);
    findings_[f.id] = std::move(f);
  }
}

std::string Tracker::AssignJob(const output::ReportJob& job, bool* is_new) {
  *is_new = false;
  if (auto it = job_by_gpus_.find(job.gpus); it != job_by_gpus_.end()) return it->second;
  // A window may miss a few GPUs of a job (idle, or at the edge): match an active job closely.
  std::string best;
  double best_j = 0.9;
  for (const auto& [id, js] : jobs_) {
    if (!js.active) continue;
    const double jac = Jaccard(js.gpus, job.gpus);
    if (jac >= best_j) best_j = jac, best = id;
  }
  if (!best.empty()) return best;
  *is_new = true;
  return NewJobId(job.gpus);
}

std::string Tracker::NewJobId(const std::vector<IpAddr>& gpus) const {
  // Taken only by a job first seen with exactly these GPUs whose set has changed since (else the
  // exact match above would have found it): rare, and resolved the same way by every tracker
  // that saw that job.
  for (int attempt = 1;; ++attempt) {
    std::string id = StableJobId(gpus, attempt);
    if (jobs_.count(id) == 0) return id;
  }
}

StoredFinding* Tracker::MergeIntoOpen(const std::string& key, const output::ReportFinding& f,
                                      int64_t window_end_ns) {
  auto it = open_findings_.find(key);
  if (it == open_findings_.end()) return nullptr;
  auto fit = findings_.find(it->second);
  if (fit == findings_.end() || f.start_ns > fit->second.finding.end_ns + options_.step_ns) {
    return nullptr;
  }
  StoredFinding& s = fit->second;
  output::ReportFinding& old = s.finding;
  const bool raised = f.severity > old.severity;
  const int64_t start = std::min(old.start_ns, f.start_ns);
  const int64_t end = std::max(old.end_ns, f.end_ns);
  const auto severity = std::max(old.severity, f.severity);
  const int units = std::max(old.units, f.units);
  if (f.units >= old.units || raised) old = f;  // the fuller evidence wins
  old.start_ns = start;
  old.end_ns = end;
  old.severity = severity;
  old.units = units;
  s.last_window_end_ns = window_end_ns;
  ++s.windows;
  if (raised) CountRaise(old);
  return &s;
}

StoredFinding* Tracker::AddFinding(output::ReportFinding f, int64_t window_end_ns, bool mergeable) {
  const std::string key = MergeKey(f);
  if (mergeable) {
    if (StoredFinding* merged = MergeIntoOpen(key, f, window_end_ns)) return merged;
  }
  StoredFinding s;
  // Two findings of one identity first reported by the same window (disjoint times within it)
  // take the next free id, in the order the window lists them.
  s.id = StableFindingId(key, window_end_ns);
  while (findings_.count(s.id) != 0) s.id = NextFindingId(s.id);
  s.finding = std::move(f);
  s.first_window_end_ns = s.last_window_end_ns = window_end_ns;
  s.windows = 1;
  CountRaise(s.finding);
  if (mergeable) open_findings_[key] = s.id;
  finding_order_.emplace(s.first_window_end_ns, s.id);
  auto [it, _] = findings_.emplace(s.id, std::move(s));
  DropOldestFindings();
  return &it->second;
}

void Tracker::DropOldestFindings() {
  while (findings_.size() > kMaxFindings) {
    const int64_t id = finding_order_.begin()->second;
    finding_order_.erase(finding_order_.begin());
    auto oldest = findings_.find(id);
    auto o = open_findings_.find(MergeKey(oldest->second.finding));
    if (o != open_findings_.end() && o->second == id) open_findings_.erase(o);
    findings_.erase(oldest);
  }
}

namespace {

std::string LossSummary(const WindowLoss& loss) {
  std::string by;
  for (const auto& [reason, n] : loss.lost) {
    if (n == 0) continue;
    by += fmt::format("{}{} {}", by.empty() ? "" : ", ", reason, n);
  }
  return by;
}

}  // namespace

const JobState* Tracker::FindJob(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const StoredFinding* Tracker::FindFinding(int64_t id) const {
  auto it = findings_.find(id);
  return it == findings_.end() ? nullptr : &it->second;
}

void Tracker::NoteIncomplete(const Window& window, const WindowLoss& loss,
                             const std::string& failed, Store::WindowWrite* write,
                             output::Report* report) {
  IncompleteWindow iw;
  iw.start_ns = window.start_ns;
  iw.end_ns = window.end_ns;
  iw.nominal_start_ns = window.nominal_start_ns;
  iw.records = window.records;
  iw.lost = loss.lost;
  iw.failed = failed;
  if (loss.Total() == 0 && failed.empty() && !window.shortened()) return;
  recent_incomplete_.push_back(std::move(iw));
  while (recent_incomplete_.size() > kMaxIncompleteWindows) recent_incomplete_.pop_front();
  ++incomplete_windows_;
  if (loss.Total() > 0) {
    // Loud: a finding, merged across consecutive windows like any other.
    const double share = loss.Share();
    output::ReportFinding f;
    f.kind = diagnosis::FindingKind::kTelemetryLoss;
    f.severity = share >= 0.05    ? diagnosis::Severity::kCritical
                 : share >= 0.001 ? diagnosis::Severity::kWarning
                                  : diagnosis::Severity::kInfo;
    f.start_ns = window.start_ns;
    f.end_ns = window.end_ns;
    f.metric = "records_lost_share";
    f.value = share;
    f.units = static_cast<int>(std::min<uint64_t>(loss.Total(), INT32_MAX));
    f.summary = fmt::format(
        "telemetry lost: {} of {} records ({:.3f}%) dropped before analysis while the window "
        "ending {} arrived ({}); findings of this window may be missing or weaker",
        loss.Total(), loss.Total() + loss.accepted, 100 * share, window.end_ns, LossSummary(loss));
    if (report != nullptr) {
      report->findings.push_back(std::move(f));  // merged below with the window's findings
    } else {
      write->findings.push_back(AddFinding(std::move(f), window.end_ns, true));
    }
  }
  if (!failed.empty()) {
    output::ReportFinding f;
    f.kind = diagnosis::FindingKind::kTelemetryLoss;
    f.severity = diagnosis::Severity::kWarning;
    f.start_ns = window.start_ns;
    f.end_ns = window.end_ns;
    f.metric = "window_not_analysed";
    f.value = static_cast<double>(window.records);
    f.summary = fmt::format("window {}-{} ({} records) was not analysed: {}", window.start_ns,
                            window.end_ns, window.records, failed);
    write->findings.push_back(AddFinding(std::move(f), window.end_ns, true));
  }
}

Tracker::WindowAnalysis Tracker::AnalyseRecords(Window& window, const PointTable& points) const {
  WindowAnalysis out;
  out.baselines = baselines_;  // committed only if the window succeeds
  // The window through the same pipeline as `analyze` (pipeline/analyze_window.h). The
  // window's segments are let go as soon as its table is built (they are the buffer's memory).
  flow::FlowTable table;
  table.Reserve(window.records);
  if (window.left_to_another_holder) {
    uint64_t left_out = 0;
    window.ForEach([&](const BufferedRecord& r) {
      if (window.left_to_another_holder(r.src)) {
        ++left_out;
      } else {
        table.OnRecord(r.ToFlowRecord());
      }
    });
    window.records -= left_out;  // the window's records are those analysed
  } else {
    window.ForEach([&table](const BufferedRecord& r) { table.OnRecord(r.ToFlowRecord()); });
  }
  const uint64_t window_records = window.records;
  window.slices.clear();
  window.slices.shrink_to_fit();
  pipeline::PrepareWindowTable(&table, options_.window.analysis.threads);
  output::ReportBuilder builder(static_cast<double>(options_.window_ns) / 1e9);
  Stats input;
  input.Add(Stat::records_read, window_records);
  pipeline::WindowInputs in;
  in.start_ns = window.start_ns;
  in.end_ns = window.end_ns;
  in.topology = topology_;
  in.points = &points;
  pipeline::WindowOptions window_options = options_.window;
  window_options.measure_switch_bandwidth = true;
  window_options.fabric_contribution = options_.fabric_stage;
  pipeline::WindowSummary summary = pipeline::AnalyzeWindow(
      std::move(table), in, window_options, &out.baselines, &input, &builder);
  out.switch_dp_bandwidth = std::move(summary.switch_dp_bandwidth);
  out.fabric = std::move(summary.fabric);
  out.fabric_job_gpus = std::move(summary.fabric_job_gpus);
  builder.AddSource("live window", "live", window_records);
  builder.SetInputStats(input);
  out.report = builder.Build();
  return out;
}

std::vector<std::string> Tracker::MatchJobs(int64_t window_start_ns, int64_t window_end_ns,
                                            output::Report* report, Store::WindowWrite* write) {
  std::map<std::string, std::string> rename;  // window job id -> service job id
  std::set<std::string> seen;
  std::vector<std::string> changed;
  for (output::ReportJob& rj : report->jobs) {
    bool is_new = false;
    const std::string id = AssignJob(rj, &is_new);
    rename[rj.id] = id;
    seen.insert(id);
    JobState& js = jobs_[id];
    if (is_new) {
      js.id = id;
      js.first_seen_ns = window_end_ns;
    }
    if (js.gpus != rj.gpus) {
      job_by_gpus_.erase(js.gpus);
      js.gpus = rj.gpus;
    }
    job_by_gpus_[js.gpus] = id;
    js.hosts = rj.hosts;
    if (rj.layout.consistent || !js.layout.consistent) js.layout = rj.layout;
    js.step_time = rj.step_time;
    js.last_seen_ns = window_end_ns;
    const bool restarted = !js.active;
    js.active = true;
    ++js.windows;
    changed.push_back(id);
    rj.id = id;
    if (is_new || restarted) {
      output::ReportFinding f;
      f.kind = diagnosis::FindingKind::kJobStarted;
      f.job = id;
      f.start_ns = f.end_ns = window_start_ns;
      f.cause = diagnosis::Cause::kUnknown;
      f.summary = fmt::format("{} {}: {} GPUs on {} hosts, layout DP{} x PP{} x TP{}", id,
                              restarted ? "resumed" : "appeared", js.gpus.size(), js.hosts.size(),
                              js.layout.dp, js.layout.pp, js.layout.tp);
      write->findings.push_back(AddFinding(std::move(f), window_end_ns, false));
    }
  }
  EndUnseenJobs(seen, window_end_ns, write, &changed);
  auto ren = [&](std::string* job) {
    if (auto it = rename.find(*job); it != rename.end()) *job = it->second;
  };
  for (output::ReportTimeline& t : report->timelines) ren(&t.job);
  for (output::ReportPair& p : report->pairs) ren(&p.job);
  for (output::ReportFinding& f : report->findings) {
    ren(&f.job);
    f.summary = RenameJobsInText(f.summary, rename);
  }
  // Scheduler jobs by the tracker's job ids, so the scheduler_mismatch findings merge across
  // windows like any other.
  if (options_.jobs_map) {
    output::ApplySchedulerJobs(*options_.jobs_map, report);
    for (const output::ReportJob& rj : report->jobs) jobs_[rj.id].scheduler = rj.scheduler;
  }
  return changed;
}

std::vector<std::string> Tracker::HandOverJobs(
    const std::function<bool(const IpAddr&)>& left_to_another_holder) {
  std::vector<std::string> handed;
  if (!left_to_another_holder) return handed;
  for (auto& [id, js] : jobs_) {
    if (!js.active ||
        std::none_of(js.gpus.begin(), js.gpus.end(), left_to_another_holder)) {
      continue;
    }
    js.active = false;  // no job_ended finding: the job goes on, analysed elsewhere
    handed.push_back(id);
    fmt::print(stderr, "llmprism serve: {} handed over: its shard's new holder analyses it\n", id);
  }
  return handed;
}

void Tracker::EndUnseenJobs(const std::set<std::string>& seen, int64_t window_end_ns,
                            Store::WindowWrite* write, std::vector<std::string>* changed) {
  for (auto& [id, js] : jobs_) {
    if (!js.active || seen.count(id)) continue;
    // Ended once unseen for a whole window length, not at the first window without it.
    if (js.last_seen_ns <= window_end_ns - options_.window_ns) {
      js.active = false;
      changed->push_back(id);
      output::ReportFinding f;
      f.kind = diagnosis::FindingKind::kJobEnded;
      f.job = id;
      f.start_ns = f.end_ns = js.last_seen_ns;
      f.summary = fmt::format("{} ended: not seen since the window ending {}", id, js.last_seen_ns);
      write->findings.push_back(AddFinding(std::move(f), window_end_ns, false));
    }
  }
}

void Tracker::RecordJobSteps(const output::Report& report, Store::WindowWrite* write) {
  for (const output::ReportJob& rj : report.jobs) {
    JobState& js = jobs_[rj.id];
    std::vector<StepPoint> fresh = JobSteps(report, rj.id);
    const size_t before = js.steps.size();
    AppendNewSteps(&js.steps, fresh, [](const StepPoint& p) { return p.start_ns; },
                   [](const StepPoint& p) { return p.end_ns; });
    for (size_t i = before; i < js.steps.size(); ++i) write->steps.emplace_back(rj.id, js.steps[i]);
    if (js.steps.size() > kMaxStepsInMemory) {
      js.steps.erase(js.steps.begin(),
                     js.steps.begin() + static_cast<ptrdiff_t>(js.steps.size() - kMaxStepsInMemory));
    }
  }
}

void Tracker::RecordGpuHistory(const output::Report& report, int64_t window_end_ns) {
  for (const output::ReportTimeline& t : report.timelines) {
    GpuHistory& h = gpus_[t.gpu];
    h.job = t.job;
    h.stage = t.stage;
    const size_t kept = h.steps.size();
    AppendNewSteps(&h.steps, t.steps, [](const output::ReportStep& s) { return s.start_ns; },
                   [](const output::ReportStep& s) { return s.end_ns; });
    // The timelines API shows no pipeline events; kept, they would be most of the history's
    // memory (and of every snapshot's copy of it).
    for (size_t i = kept; i < h.steps.size(); ++i) {
      std::vector<output::ReportPpEvent>().swap(h.steps[i].pp_events);
    }
  }
  const int64_t horizon = window_end_ns - options_.history_ns;
  for (auto it = gpus_.begin(); it != gpus_.end();) {
    auto& st = it->second.steps;
    auto keep = std::find_if(st.begin(), st.end(),
                             [&](const output::ReportStep& s) { return s.end_ns >= horizon; });
    st.erase(st.begin(), keep);
    it = st.empty() ? gpus_.erase(it) : std::next(it);
  }
}

void Tracker::MergeFindings(const output::Report& report, int64_t window_end_ns,
                            Store::WindowWrite* write) {
  switch_bw_.clear();
  for (const output::ReportFinding& f : report.findings) {
    if (f.metric == "relative_bandwidth") {
      for (const std::string& sw : f.switches) {
        auto [it, inserted] = switch_bw_.try_emplace(sw, f.value);
        if (!inserted) it->second = std::min(it->second, f.value);
      }
    }
    write->findings.push_back(AddFinding(f, window_end_ns, true));
  }
  // A finding both created and updated in this window is written once.
  std::sort(write->findings.begin(), write->findings.end());
  write->findings.erase(std::unique(write->findings.begin(), write->findings.end()),
                        write->findings.end());
}

void Tracker::KeepLatestReport(output::Report report, output::Report* report_out) {
  output::HtmlReportOptions html;
  html.title = "llmprism live";
  dashboard_json_ =
      std::make_shared<const std::string>(output::BuildHtmlReportData(report, html).dump());
  // Kept for /api/v1/report (the report JSON of `analyze --report`, without --pp-events): the
  // per-step pipeline events are most of a report's memory and neither it nor the timelines API
  // shows them.
  for (output::ReportTimeline& t : report.timelines) {
    for (output::ReportStep& st : t.steps) std::vector<output::ReportPpEvent>().swap(st.pp_events);
  }
  latest_report_ = std::make_shared<const output::Report>(std::move(report));
  if (report_out != nullptr) *report_out = *latest_report_;
}

Status Tracker::AnalyzeWindow(Window window, const PointTable& points, const WindowLoss& loss,
                              Store::WindowWrite* write, output::Report* report_out) {
  const auto t0 = std::chrono::steady_clock::now();
  *write = Store::WindowWrite();
  write->baselines = &baselines_;
  fabric_contribution_.reset();
  const uint64_t window_records = window.records;
  WindowAnalysis analysis;
  try {
    analysis = AnalyseRecords(window, points);
  } catch (const std::bad_alloc&) {
    // Out of memory inside the window: nothing of it is kept (baselines untouched), the window
    // is reported as not analysed, and the service goes on with the next one.
    const std::string why = fmt::format(
        "out of memory (std::bad_alloc) analysing {} records; lower --memory-limit or --window",
        window_records);
    ++windows_failed_;
    NoteIncomplete(window, loss, why, write, nullptr);
    return MakeError(ErrorCode::kInternal, "window {}-{}: {}", window.start_ns,
                     window.end_ns, why);
  }
  baselines_ = std::move(analysis.baselines);
  switch_dp_bw_ = std::move(analysis.switch_dp_bandwidth);
  output::Report& report = analysis.report;
  if (!report.windows.empty()) {
    report.windows.back().records_lost = loss.lost;
    std::erase_if(report.windows.back().records_lost, [](const auto& kv) { return kv.second == 0; });
    report.windows.back().nominal_start_ns = window.nominal_start_ns;
  }
  NoteIncomplete(window, loss, "", write, &report);

  std::vector<std::string> changed = HandOverJobs(window.left_to_another_holder);
  for (std::string& id : MatchJobs(window.start_ns, window.end_ns, &report, write))
    changed.push_back(std::move(id));
  if (options_.fabric_stage) {
    NameFabricJobs(report, &analysis);
    fabric_contribution_ = std::move(analysis.fabric);
    // The fabric stage judges switches and links from every shard's records: this shard's view
    // (already used for its jobs' causes) is not a finding of its own.
    std::erase_if(report.findings, [](const output::ReportFinding& f) {
      return diagnosis::IsFabricFinding(f.kind);
    });
  }
  RecordJobSteps(report, write);
  RecordGpuHistory(report, window.end_ns);
  MergeFindings(report, window.end_ns, write);
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  for (const std::string& id : changed) write->jobs.push_back(&jobs_[id]);
  KeepLatestReport(std::move(report), report_out);

  ++windows_;
  window_start_ns_ = window.start_ns;
  window_end_ns_ = window.end_ns;
  window_records_ = window.records;  // less any left out (Window::leave_out)
  analysis_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return OkStatus();
}

void Tracker::NameFabricJobs(const output::Report& report, WindowAnalysis* analysis) {
  std::map<std::vector<IpAddr>, std::string> id_of;
  for (const output::ReportJob& rj : report.jobs) id_of.emplace(rj.gpus, rj.id);
  diagnosis::FabricContribution& c = analysis->fabric;
  for (size_t j = 0; j < c.jobs.size() && j < analysis->fabric_job_gpus.size(); ++j) {
    // Every job of the window is one of the report's (MergeJobs keys them by the same GPUs).
    if (auto it = id_of.find(analysis->fabric_job_gpus[j]); it != id_of.end()) {
      c.jobs[j] = it->second;
    }
  }
}

void Tracker::AddFabricWindow(const FabricVerdict& v, Store::WindowWrite* write) {
  *write = Store::WindowWrite();
  write->baselines = &baselines_;
  if (!v.missing_shards.empty()) {
    ++incomplete_windows_;
    IncompleteWindow iw;
    iw.start_ns = iw.nominal_start_ns = v.start_ns;
    iw.end_ns = v.end_ns;
    iw.records = v.records;
    iw.failed = fmt::format("judged without the fabric contributions of shards {}",
                            fmt::join(v.missing_shards, ", "));
    recent_incomplete_.push_back(iw);
    while (recent_incomplete_.size() > kMaxIncompleteWindows) recent_incomplete_.pop_front();
    // Loud: a finding, merged across consecutive windows like any other.
    output::ReportFinding f;
    f.kind = diagnosis::FindingKind::kTelemetryLoss;
    f.severity = diagnosis::Severity::kWarning;
    f.start_ns = v.start_ns;
    f.end_ns = v.end_ns;
    f.metric = "fabric_shards_missing";
    f.value = static_cast<double>(v.missing_shards.size());
    f.units = static_cast<int>(v.missing_shards.size());
    f.summary = fmt::format(
        "the fabric window ending {} was judged without the contributions of shard(s) {} of {} "
        "(not in the stream in time): its switch and link findings see only the other shards' "
        "jobs",
        v.end_ns, fmt::join(v.missing_shards, ", "), v.shards);
    write->findings.push_back(AddFinding(std::move(f), v.end_ns, true));
  }
  output::Report report;
  report.findings = v.findings;
  MergeFindings(report, v.end_ns, write);
  ++windows_;
  window_start_ns_ = v.start_ns;
  window_end_ns_ = v.end_ns;
  window_records_ = v.records;
  analysis_seconds_ = v.judge_seconds;
}

std::shared_ptr<const Snapshot> Tracker::BuildSnapshot() const {
  auto s = std::make_shared<Snapshot>();
  s->version = ++const_cast<Tracker*>(this)->version_;
  s->built_wall_ns = WallNs();
  s->window_start_ns = window_start_ns_;
  s->window_end_ns = window_end_ns_;
  s->window_records = window_records_;
  s->analysis_seconds = analysis_seconds_;
  s->windows_analysed = windows_;
  std::vector<const JobState*> jobs;
  for (const auto& [id, js] : jobs_) jobs.push_back(&js);
  std::sort(jobs.begin(), jobs.end(), [](const JobState* a, const JobState* b) {
    return std::tie(a->first_seen_ns, a->id) < std::tie(b->first_seen_ns, b->id);
  });
  for (const JobState* j : jobs) s->jobs.push_back(*j);
  s->findings.reserve(findings_.size());
  for (const auto& [first_window_end_ns, id] : finding_order_) {
    s->findings.push_back(findings_.at(id));
  }
  s->gpus = gpus_;
  s->switch_bandwidth_relative = switch_bw_;
  s->switch_dp_bandwidth = switch_dp_bw_;
  s->finding_raises = finding_raises_;
  s->dashboard_json = dashboard_json_;
  s->report = latest_report_;
  s->windows_failed = windows_failed_;
  s->incomplete_windows = incomplete_windows_;
  s->recent_incomplete.assign(recent_incomplete_.begin(), recent_incomplete_.end());
  return s;
}

}  // namespace prism::service
