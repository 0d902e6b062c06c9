#include "output/html_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "output/html_assets.h"
#include "output/report_views.h"
#include "output/text_summary.h"

namespace prism::output {
namespace {

using nlohmann::json;

// Most GPUs listed per finding in the page (the report JSON has them all).
constexpr size_t kMaxFindingGpus = 64;

double Seconds(int64_t ns, int64_t origin_ns) {
  return std::round(static_cast<double>(ns - origin_ns) / 1e3) / 1e6;  // µs resolution
}
int64_t Micros(int64_t ns, int64_t origin_ns) {
  return static_cast<int64_t>(std::llround(static_cast<double>(ns - origin_ns) / 1e3));
}

std::string HostOf(const ReportJob& job, const IpAddr& gpu) {
  auto it = job.host_of.find(gpu);
  return it != job.host_of.end() ? it->second : gpu.ToString();
}

// The scheduler job (--jobs-map) as the page shows it; null without one.
json SchedulerJson(const SchedulerRef& s) {
  if (s.empty()) return nullptr;
  return {{"job_id", s.job_id}, {"user", s.user}, {"name", s.name}};
}

json FindingJson(const ReportFinding& f, size_t index, int64_t origin_ns) {
  json gpus = json::array();
  for (size_t i = 0; i < f.gpus.size() && i < kMaxFindingGpus; ++i) gpus.push_back(f.gpus[i].ToString());
  return {{"id", fmt::format("f{}", index)},
          {"kind", diagnosis::FindingKindName(f.kind)},
          {"scheduler", SchedulerJson(f.scheduler)},
          {"severity", diagnosis::SeverityName(f.severity)},
          {"job", f.job},
          {"gpus", gpus},
          {"gpus_total", f.gpus.size()},
          {"switches", f.switches},
          {"start_s", Seconds(f.start_ns, origin_ns)},
          {"end_s", Seconds(f.end_ns, origin_ns)},
          {"metric", f.metric},
          {"value", f.value},
          {"baseline", f.baseline},
          {"sigma", f.sigma},
          {"units", f.units},
          {"hosts", f.hosts},
          {"cause", diagnosis::CauseName(f.cause)},
          {"effect", FindingEffect(f)},
          {"summary", f.summary}};
}

// Layout: per stage, its hosts with their GPU count and whether a finding names one of them.
json LayoutStagesJson(const Report& report, const ReportJob& job) {
  std::set<IpAddr> finding_gpus;
  for (const ReportFinding& f : report.findings) {
    if (f.job == job.id) finding_gpus.insert(f.gpus.begin(), f.gpus.end());
  }
  json stages = json::array();
  for (const auto& stage : job.layout.stages) {
    std::map<std::string, std::pair<int, bool>> hosts;
    for (const IpAddr& g : stage) {
      auto& h = hosts[HostOf(job, g)];
      ++h.first;
      h.second = h.second || finding_gpus.count(g) > 0;
    }
    json list = json::array();
    for (const auto& [name, v] : hosts) list.push_back({name, v.first, v.second ? 1 : 0});
    stages.push_back(list);
  }
  return stages;
}

// The job step a GPU step belongs to: the last job step starting at or before it (-1: none).
struct JobStepIndex {
  std::vector<int64_t> starts;  // of the job's steps, ascending
  int operator()(int64_t start_ns) const {
    auto it = std::upper_bound(starts.begin(), starts.end(), start_ns);
    return static_cast<int>(it - starts.begin()) - 1;
  }
};

// Heatmap: every GPU (by stage, then address), its compute per job step in 0.1 ms (-1: none).
json HeatmapJson(const std::map<IpAddr, const ReportTimeline*>& by_gpu, const JobStepIndex& index) {
  std::vector<const ReportTimeline*> ordered;
  for (const auto& [gpu, tl] : by_gpu) ordered.push_back(tl);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const ReportTimeline* a, const ReportTimeline* b) { return a->stage < b->stage; });
  json heat_rows = json::array(), heat_gpus = json::array(), heat_stage = json::array();
  for (const ReportTimeline* tl : ordered) {
    std::vector<int64_t> cells(index.starts.size(), -1);
    for (const ReportStep& s : tl->steps) {
      int k = index(s.start_ns);
      if (k >= 0 && k < static_cast<int>(cells.size())) cells[k] = std::llround(static_cast<double>(s.compute_ns) / 1e5);
    }
    heat_rows.push_back(cells);
    heat_gpus.push_back(tl->gpu.ToString());
    heat_stage.push_back(tl->stage);
  }
  return {{"gpus", heat_gpus}, {"stage", heat_stage}, {"rows", heat_rows}};
}

// Timeline rows of the selected GPUs: each step as [start_µs, job step index, kind, dur_µs, kind,
// dur_µs, ...] (segments are adjacent, so their starts need not be stored).
json TimelineRowsJson(const ReportJob& job, const GpuSelection& sel,
                      const std::map<IpAddr, const ReportTimeline*>& by_gpu,
                      const JobStepIndex& index, int64_t origin_ns) {
  json rows = json::array();
  for (const SelectedGpu& g : sel.gpus) {
    const ReportTimeline& tl = *by_gpu.at(g.gpu);
    json steps = json::array();
    for (const ReportStep& s : tl.steps) {
      json enc = json::array({Micros(s.start_ns, origin_ns), index(s.start_ns)});
      int64_t at = Micros(s.start_ns, origin_ns);
      for (const StepSegment& seg : StepSegments(s)) {
        int64_t end = Micros(seg.end_ns, origin_ns);
        enc.push_back(static_cast<int>(seg.kind));
        enc.push_back(end - at);
        at = end;
      }
      steps.push_back(enc);
    }
    rows.push_back({{"gpu", g.gpu.ToString()},
                    {"host", HostOf(job, g.gpu)},
                    {"stage", g.stage},
                    {"why", g.why},
                    {"steps", steps}});
  }
  return rows;
}

json JobJson(const Report& report, const ReportJob& job, const HtmlReportOptions& options,
             int64_t origin_ns) {
  const ReportLayout& l = job.layout;
  std::vector<JobStepPoint> series = JobStepSeries(report, job);
  StepTrend trend = ComputeStepTrend(series);
  json t = json::array(), med = json::array(), mx = json::array();
  JobStepIndex index;
  for (const JobStepPoint& p : series) {
    t.push_back(Seconds(p.start_ns, origin_ns));
    med.push_back(std::round(p.median_s * 1e6) / 1e6);
    mx.push_back(std::round(p.max_s * 1e6) / 1e6);
    index.starts.push_back(p.start_ns);
  }
  std::map<IpAddr, const ReportTimeline*> by_gpu;
  for (const ReportTimeline& tl : report.timelines) {
    if (tl.job == job.id) by_gpu[tl.gpu] = &tl;
  }
  GpuSelection sel = SelectTimelineGpus(report, job, options.max_gpus_all);

  return {{"id", job.id},
          {"scheduler", SchedulerJson(job.scheduler)},
          {"gpus", job.gpus.size()},
          {"hosts", job.hosts.size()},
          {"dp", l.dp},
          {"pp", l.pp},
          {"tp", l.tp},
          {"microbatches", l.microbatches},
          {"consistent", l.consistent},
          {"windows", job.windows},
          {"step", {{"median_s", job.step_time.median_s},
                    {"p99_s", job.step_time.p99_s},
                    {"steps", job.step_time.steps}}},
          {"trend", {{"known", trend.known},
                     {"slope_pct_per_min", trend.slope_pct_per_min},
                     {"first_s", trend.first_s},
                     {"last_s", trend.last_s}}},
          {"stages", LayoutStagesJson(report, job)},
          {"series", {{"t", t}, {"median", med}, {"max", mx}}},
          {"heat", HeatmapJson(by_gpu, index)},
          {"timeline", {{"sampled", sel.sampled},
                        {"total", sel.total},
                        {"rows", TimelineRowsJson(job, sel, by_gpu, index, origin_ns)}}}};
}

// Counters mode: the job's summed traffic, its iterations and its servers, times in seconds since
// the origin like everything else on the page.
json CountersJobJson(const Report& report, const ReportCountersJob& cj, int64_t origin_ns) {
  json gbps = json::array();
  for (float v : cj.traffic_gbps) gbps.push_back(std::round(static_cast<double>(v) * 1e3) / 1e3);
  json iterations = json::array();
  for (const auto& [a, b] : cj.iterations) {
    iterations.push_back({std::round((a - origin_ns) / 1e6) / 1e3, std::round((b - origin_ns) / 1e6) / 1e3});
  }
  json servers = json::array();
  for (const ReportCountersServer& s : report.counters.servers) {
    if (s.job != cj.id) continue;
    servers.push_back({{"name", s.name},
                       {"mean_gbps", s.mean_gbps},
                       {"period_s", s.period_s},
                       {"job_correlation", s.job_correlation}});
  }
  json signature = json::array();
  for (size_t i = 0; i < cj.nic_names.size() && i < cj.signature.size(); ++i) {
    signature.push_back({cj.nic_names[i], cj.signature[i]});
  }
  return {{"period_s", cj.period_s},
          {"period_strength", cj.period_strength},
          {"server_gbps", cj.server_gbps},
          {"nic_signature", signature},
          {"servers", servers},
          {"iterations", iterations},
          {"plot", {{"start_s", Seconds(cj.plot_start_ns, origin_ns)},
                    {"bin_s", cj.plot_bin_s},
                    {"gbps", gbps}}}};
}

// The input counts that are not zero, each with its severity and meaning.
json InputJson(const Report& report) {
  json input = json::array();
  for (size_t i = 0; i < kStatInfo.size(); ++i) {
    uint64_t v = report.input.values()[i];
    if (v == 0) continue;
    const char* sev = kStatInfo[i].severity == StatSeverity::kInfo ? "info" : "data_loss";
    input.push_back({{"name", kStatInfo[i].name}, {"value", v}, {"severity", sev},
                     {"description", kStatInfo[i].description}});
  }
  return input;
}

// Finding indices ranked as in the terminal summary: severity, then size of effect, then time.
std::vector<size_t> RankedFindings(const Report& report) {
  std::vector<size_t> order(report.findings.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ReportFinding& fa = report.findings[a];
    const ReportFinding& fb = report.findings[b];
    if (fa.severity != fb.severity) return fa.severity > fb.severity;
    return FindingEffect(fa) > FindingEffect(fb);
  });
  return order;
}

// Per-switch bandwidth: the Report carries no per-switch series, only findings; so this lists
// every switch a finding names, with each finding's relative bandwidth and time range.
json SwitchesJson(const Report& report, const std::vector<size_t>& order, int64_t origin_ns) {
  std::map<std::string, json> switches;
  for (size_t i : order) {
    const ReportFinding& f = report.findings[i];
    for (const std::string& sw : f.switches) {
      json& entry = switches[sw];
      if (entry.is_null()) entry = {{"name", sw}, {"findings", json::array()}};
      entry["findings"].push_back({{"id", fmt::format("f{}", i)},
                                   {"metric", f.metric},
                                   {"value", f.value},
                                   {"baseline", f.baseline},
                                   {"start_s", Seconds(f.start_ns, origin_ns)},
                                   {"end_s", Seconds(f.end_ns, origin_ns)},
                                   {"severity", diagnosis::SeverityName(f.severity)},
                                   {"kind", diagnosis::FindingKindName(f.kind)},
                                   {"job", f.job}});
    }
  }
  json switch_list = json::array();
  for (auto& [name, entry] : switches) switch_list.push_back(std::move(entry));
  return switch_list;
}

// Every job, with its port-counter view in counters mode.
json JobsJson(const Report& report, const HtmlReportOptions& options, int64_t origin_ns) {
  json jobs = json::array();
  for (const ReportJob& job : report.jobs) {
    json j = JobJson(report, job, options, origin_ns);
    if (report.mode == "counters") {
      for (const ReportCountersJob& cj : report.counters.jobs) {
        if (cj.id == job.id) j["counters"] = CountersJobJson(report, cj, origin_ns);
      }
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// What the port counters covered (null outside counters mode).
json CountersSummaryJson(const Report& report) {
  if (report.mode != "counters") return nullptr;
  const ReportCounters& c = report.counters;
  size_t unassigned = 0;
  for (const ReportCountersServer& s : c.servers) unassigned += s.job.empty() ? 1 : 0;
  return {{"poll_s", c.poll_s},
          {"refresh_s", c.refresh_s},
          {"bin_s", c.bin_s},
          {"ports", c.ports},
          {"polls", c.polls},
          {"bytes", c.bytes},
          {"servers", c.servers.size()},
          {"servers_in_no_job", unassigned}};
}

}  // namespace

json BuildHtmlReportData(const Report& report, const HtmlReportOptions& options) {
  int64_t origin_ns = report.start_ns;
  for (const ReportWindow& w : report.windows) origin_ns = std::min(origin_ns, w.records_start_ns);
  int64_t end_ns = report.end_ns;
  for (const ReportWindow& w : report.windows) end_ns = std::max(end_ns, w.records_end_ns);

  json sources = json::array();
  for (const ReportSource& s : report.sources) {
    sources.push_back({{"path", s.path}, {"format", s.format}, {"records", s.records}});
  }
  const std::vector<size_t> order = RankedFindings(report);
  json findings = json::array();
  for (size_t i : order) findings.push_back(FindingJson(report.findings[i], i, origin_ns));

  return {{"title", options.title},
          {"mode", report.mode},
          {"counters", CountersSummaryJson(report)},
          {"origin_unix_ns", fmt::format("{}", origin_ns)},
          {"duration_s", Seconds(end_ns, origin_ns)},
          {"window_s", report.window_s},
          {"windows", report.windows.size()},
          {"sources", sources},
          {"input", InputJson(report)},
          {"jobs", JobsJson(report, options, origin_ns)},
          {"findings", findings},
          {"switches", SwitchesJson(report, order, origin_ns)},
          {"max_gpus_all", options.max_gpus_all}};
}

Status WriteHtmlReport(const Report& report, std::ostream* out, const HtmlReportOptions& options) {
  std::string data = BuildHtmlReportData(report, options).dump();
  // Inside <script>, "</" could end the element early; "<\/" means the same in JSON.
  std::string safe;
  safe.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/') {
      safe += "<\\/";
      ++i;
    } else {
      safe += data[i];
    }
  }
  std::string escaped_title;
  for (char c : options.title) {
    if (c == '<') escaped_title += "&lt;";
    else if (c == '&') escaped_title += "&amp;";
    else escaped_title += c;
  }
  *out << "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       << "<title>" << escaped_title << "</title>\n"
       << "<style>\n" << assets::kUplotCss << "\n" << assets::kReportCss << "\n</style>\n"
       << "</head>\n<body>\n<div id=\"app\"><p>Loading the report…</p></div>\n"
       << "<script type=\"application/json\" id=\"prism-data\">" << safe << "</script>\n"
       << "<!-- uPlot " << "(https://github.com/leeoniya/uPlot), vendored from npm; its licence:\n"
       << assets::kUplotLicense << "-->\n"
       << "<script>\n" << assets::kUplotJs << "\n</script>\n"
       << "<script>\n" << assets::kReportJs << "\n</script>\n"
       << "</body>\n</html>\n";
  out->flush();
  if (!*out) return MakeError(ErrorCode::kDataLoss, "cannot write the HTML report");
  return {};
}

}  // namespace prism::output
