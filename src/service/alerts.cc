#include "service/alerts.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace prism::service {

namespace {

std::string JoinGpus(const std::vector<IpAddr>& gpus) {
  std::string s;
  for (const IpAddr& ip : gpus) {
    if (!s.empty()) s += ',';
    s += ip.ToString();
  }
  return s;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}


}  // namespace

std::string AlertKey(const output::ReportFinding& f) {
  return fmt::format("{}|{}|{}|{}|{}", diagnosis::FindingKindName(f.kind), f.job,
                     JoinGpus(f.gpus), Join(f.switches), Join(f.hosts));
}

bool IsAlertable(diagnosis::FindingKind kind) { return !diagnosis::IsJobEvent(kind); }

std::string Rfc3339(int64_t wall_ns) {
  int64_t s = wall_ns / 1'000'000'000;
  int64_t ms = (wall_ns % 1'000'000'000) / 1'000'000;
  if (ms < 0) ms += 1000, --s;
  const std::time_t t = static_cast<std::time_t>(s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

Alert BuildAlert(const StoredFinding& sf, int64_t now_wall_ns, int64_t hold_ns) {
  const output::ReportFinding& f = sf.finding;
  Alert a;
  a.labels["alertname"] = std::string("llmprism_") + diagnosis::FindingKindName(f.kind);
  a.labels["kind"] = diagnosis::FindingKindName(f.kind);
  a.labels["severity"] = diagnosis::SeverityName(f.severity);
  if (!f.job.empty()) a.labels["job"] = f.job;
  // With --jobs-map: the scheduler's job and its owner, for routing to the tenant.
  if (!f.scheduler.empty()) {
    a.labels["scheduler_job"] = f.scheduler.job_id;
    if (!f.scheduler.user.empty()) a.labels["user"] = f.scheduler.user;
    if (!f.scheduler.name.empty()) a.annotations["scheduler_job_name"] = f.scheduler.name;
  }
  if (!f.gpus.empty()) a.labels["gpu"] = JoinGpus(f.gpus);
  if (!f.hosts.empty()) a.labels["host"] = Join(f.hosts);
  // A link is named by its two ends (congested_link: leaf and spine; degraded_link: the access
  // link from a leaf to a GPU); other findings name the switches themselves.
  if (f.kind == diagnosis::FindingKind::kCongestedLink ||
      f.kind == diagnosis::FindingKind::kDegradedLink) {
    std::vector<std::string> ends = f.switches;
    if (ends.size() < 2 && f.gpus.size() == 1) ends.push_back(f.gpus[0].ToString());
    if (!ends.empty()) a.labels["link"] = fmt::format("{}", fmt::join(ends, "<->"));
  } else if (!f.switches.empty()) {
    a.labels["switch"] = Join(f.switches);
  }
  a.annotations["summary"] = f.summary;
  std::string evidence;
  if (!f.metric.empty()) {
    evidence = fmt::format("{} {:.4g}", f.metric, f.value);
    if (f.baseline != 0 || f.sigma != 0) {
      evidence += fmt::format(" against baseline {:.4g} (sigma {:.3g})", f.baseline, f.sigma);
    }
    if (f.units > 0) evidence += fmt::format(" over {} steps or time bins", f.units);
    evidence += "; ";
  }
  evidence += fmt::format(
      "cause {}; records from {:.3f} to {:.3f} s (Unix, event time); reported by {} analysis "
      "window(s), the first ending at {:.3f} s",
      diagnosis::CauseName(f.cause), static_cast<double>(f.start_ns) / 1e9,
      static_cast<double>(f.end_ns) / 1e9, sf.windows,
      static_cast<double>(sf.first_window_end_ns) / 1e9);
  a.annotations["description"] = evidence;
  a.annotations["finding_id"] = std::to_string(sf.id);
  // The problem's own start (event time), never after now: Alertmanager wants startsAt <= endsAt.
  a.starts_at_wall_ns = std::min(f.start_ns, now_wall_ns - 1'000'000);
  a.ends_at_wall_ns = now_wall_ns + hold_ns;
  return a;
}

AlertUpdate NextAlerts(const ActiveAlerts& previous, const AlertWindow& window) {
  const int64_t now = window.now_wall_ns;
  // One finding per key: the most severe (then the one with the fullest evidence).
  std::map<std::string, const StoredFinding*> present;
  for (const StoredFinding* f : window.findings) {
    if (f == nullptr || !IsAlertable(f->finding.kind)) continue;
    auto [it, inserted] = present.try_emplace(AlertKey(f->finding), f);
    if (inserted) continue;
    const output::ReportFinding& have = it->second->finding;
    if (f->finding.severity > have.severity ||
        (f->finding.severity == have.severity && f->finding.units > have.units)) {
      it->second = f;
    }
  }
  AlertUpdate u;
  auto resolve = [&](const Alert& old) {
    Alert r = old;
    r.ends_at_wall_ns = std::max(now, r.starts_at_wall_ns);
    r.resolved = true;
    u.post.push_back(std::move(r));
  };
  for (const auto& [key, f] : present) {
    Alert a = BuildAlert(*f, now, window.hold_ns);
    if (auto it = previous.find(key); it != previous.end()) {
      a.starts_at_wall_ns = it->second.starts_at_wall_ns;  // when it first fired
      if (it->second.labels != a.labels) resolve(it->second);
    }
    u.post.push_back(a);
    u.active.emplace(key, std::move(a));
  }
  for (const auto& [key, old] : previous) {
    if (present.count(key) != 0) continue;
    if (window.analysed) {
      resolve(old);
    } else {
      // Not analysed: no evidence either way; keep it firing.
      Alert a = old;
      a.ends_at_wall_ns = now + window.hold_ns;
      u.post.push_back(a);
      u.active.emplace(key, std::move(a));
    }
  }
  return u;
}

nlohmann::json AlertsToJson(const std::vector<Alert>& alerts) {
  nlohmann::json out = nlohmann::json::array();
  for (const Alert& a : alerts) {
    nlohmann::json j;
    j["labels"] = a.labels;
    j["annotations"] = a.annotations;
    j["startsAt"] = Rfc3339(a.starts_at_wall_ns);
    j["endsAt"] = Rfc3339(a.ends_at_wall_ns);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace prism::service
