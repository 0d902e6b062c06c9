#include "service/api_json.h"

#include <algorithm>

#include "diagnosis/finding.h"
#include "output/report_json.h"

namespace prism::service {

using nlohmann::json;

namespace {

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

json Ips(const std::vector<IpAddr>& v) {
  json a = json::array();
  for (const IpAddr& ip : v) a.push_back(ip.ToString());
  return a;
}

std::vector<IpAddr> ParseIps(const json& a) {
  std::vector<IpAddr> out;
  if (!a.is_array()) return out;
  for (const json& x : a) {
    if (!x.is_string()) continue;
    if (auto ip = IpAddr::Parse(x.get<std::string>())) out.push_back(*ip);
  }
  return out;
}

diagnosis::Severity ParseSeverity(const std::string& s) {
  if (s == "critical") return diagnosis::Severity::kCritical;
  if (s == "warning") return diagnosis::Severity::kWarning;
  return diagnosis::Severity::kInfo;
}

diagnosis::Cause ParseCause(const std::string& s) {
  if (s == "gpu") return diagnosis::Cause::kGpu;
  if (s == "network") return diagnosis::Cause::kNetwork;
  return diagnosis::Cause::kUnknown;
}

json JobSummaryJson(const JobState& j) {
  json out{{"id", j.id},
           {"state", j.active ? "active" : "ended"},
           {"gpus", j.gpus.size()},
           {"hosts", j.hosts.size()},
           {"layout", {{"dp", j.layout.dp}, {"pp", j.layout.pp}, {"tp", j.layout.tp},
                       {"microbatches", j.layout.microbatches},
                       {"consistent", j.layout.consistent}}},
           {"step_time", {{"median_s", j.step_time.median_s}, {"p99_s", j.step_time.p99_s},
                          {"steps", j.step_time.steps}}},
           {"first_seen_ns", j.first_seen_ns},
           {"last_seen_ns", j.last_seen_ns},
           {"windows", j.windows},
           {"step_points", j.steps.size()}};
  if (!j.scheduler.empty()) {  // --jobs-map
    out["scheduler"] = {{"job_id", j.scheduler.job_id}, {"user", j.scheduler.user},
                        {"name", j.scheduler.name}};
  }
  return out;
}

}  // namespace

json LayoutToJson(const output::ReportLayout& l) {
  json stages = json::array();
  for (const auto& st : l.stages) stages.push_back(Ips(st));
  return json{{"dp", l.dp}, {"pp", l.pp}, {"tp", l.tp}, {"microbatches", l.microbatches},
              {"consistent", l.consistent}, {"stages", stages}};
}

output::ReportLayout LayoutFromJson(const json& j) {
  output::ReportLayout l;
  if (!j.is_object()) return l;
  l.dp = j.value("dp", 0);
  l.pp = j.value("pp", 0);
  l.tp = j.value("tp", 0);
  l.microbatches = j.value("microbatches", 0);
  l.consistent = j.value("consistent", false);
  if (j.contains("stages") && j["stages"].is_array()) {
    for (const json& st : j["stages"]) l.stages.push_back(ParseIps(st));
  }
  return l;
}

json FindingToJson(const StoredFinding& s) {
  json j = output::FindingJson(s.finding);
  j["id"] = s.id;
  j["first_window_end_ns"] = s.first_window_end_ns;
  j["last_window_end_ns"] = s.last_window_end_ns;
  j["windows"] = s.windows;
  return j;
}

std::optional<StoredFinding> FindingFromJson(const json& j) {
  if (!j.is_object() || !j.contains("id") || !j.contains("kind")) return std::nullopt;
  try {
    StoredFinding s;
    s.id = j.at("id").get<int64_t>();
    output::ReportFinding& f = s.finding;
    auto kind = diagnosis::ParseFindingKind(j.at("kind").get<std::string>());
    if (!kind) return std::nullopt;  // a kind this version does not know
    f.kind = *kind;
    f.severity = ParseSeverity(j.value("severity", "info"));
    f.job = j.contains("job") && j["job"].is_string() ? j["job"].get<std::string>() : "";  // null: none
    f.gpus = ParseIps(j.value("gpus", json::array()));
    f.switches = j.value("switches", std::vector<std::string>{});
    f.hosts = j.value("hosts", std::vector<std::string>{});
    f.start_ns = j.value("start_ns", int64_t{0});
    f.end_ns = j.value("end_ns", int64_t{0});
    f.metric = j.value("metric", "");
    f.value = j.value("value", 0.0);
    f.baseline = j.value("baseline", 0.0);
    f.sigma = j.value("sigma", 0.0);
    f.units = j.value("units", 0);
    f.cause = ParseCause(j.value("cause", "unknown"));
    f.summary = j.value("summary", "");
    if (j.contains("scheduler") && j["scheduler"].is_object()) {
      const json& sj = j["scheduler"];
      f.scheduler = {sj.value("job_id", ""), sj.value("user", ""), sj.value("name", "")};
    }
    s.first_window_end_ns = j.value("first_window_end_ns", int64_t{0});
    s.last_window_end_ns = j.value("last_window_end_ns", int64_t{0});
    s.windows = j.value("windows", 0);
    return s;
  } catch (const json::exception&) {
    return std::nullopt;  // a damaged row: skipped by the caller, counted
  }
}

json JobsJson(const Snapshot& s) {
  json jobs = json::array();
  for (const JobState& j : s.jobs) jobs.push_back(JobSummaryJson(j));
  return json{{"window_end_ns", s.window_end_ns}, {"jobs", jobs}};
}

std::optional<json> JobJson(const Snapshot& s, const std::string& id) {
  for (const JobState& j : s.jobs) {
    if (j.id != id) continue;
    json out = JobSummaryJson(j);
    out["layout"] = LayoutToJson(j.layout);
    out["gpu_list"] = Ips(j.gpus);
    out["host_list"] = j.hosts;
    json steps = json::array();
    for (const StepPoint& p : j.steps) {
      steps.push_back(json::array({p.start_ns, p.end_ns, p.step_s}));
    }
    out["step_series"] = json{{"columns", {"start_ns", "end_ns", "step_s"}}, {"rows", steps}};
    return out;
  }
  return std::nullopt;
}

json FindingsJson(const Snapshot& s, const FindingFilter& filter) {
  std::vector<const StoredFinding*> hits;
  for (const StoredFinding& f : s.findings) {
    if (!filter.job.empty() && f.finding.job != filter.job) continue;
    if (!filter.kind.empty() && diagnosis::FindingKindName(f.finding.kind) != filter.kind) continue;
    if (!filter.severity.empty() && filter.severity != diagnosis::SeverityName(f.finding.severity))
      continue;
    if (f.finding.end_ns < filter.since_ns) continue;
    hits.push_back(&f);
  }
  const size_t total = hits.size();
  if (hits.size() > filter.limit) hits.erase(hits.begin(), hits.end() - filter.limit);
  json out = json::array();
  for (const StoredFinding* f : hits) out.push_back(FindingToJson(*f));
  return json{{"total", total}, {"findings", out}};
}

std::optional<json> GpuTimelineJson(const Snapshot& s, const IpAddr& gpu, int64_t from_ns,
                                     int64_t to_ns) {
  auto it = s.gpus.find(gpu);
  if (it == s.gpus.end()) return std::nullopt;
  const GpuHistory& h = it->second;
  json steps = json::array();
  for (const output::ReportStep& st : h.steps) {
    if (st.end_ns < from_ns || st.start_ns > to_ns) continue;
    steps.push_back(json{{"start_ns", st.start_ns},
                         {"end_ns", st.end_ns},
                         {"step_s", Seconds(st.end_ns - st.start_ns)},
                         {"dp_start_ns", st.dp_start_ns},
                         {"dp_end_ns", st.dp_end_ns},
                         {"compute_ns", st.compute_ns},
                         {"bubble_ns", st.bubble_ns}});
  }
  return json{{"gpu", gpu.ToString()}, {"job", h.job}, {"stage", h.stage}, {"steps", steps}};
}

}  // namespace prism::service
