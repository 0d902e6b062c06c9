// File: service/alerts.h
// Findings of `llmprism serve` as Alertmanager alerts (API v2), decided per analysed window by a
// pure function of the previously active alerts and the findings the new window reported:
//   - a finding is identified across windows by a stable key: kind, job and subject (GPUs,
//     switches, hosts); findings of one key (e.g. two rules naming the same straggler) are one
//     alert, at their highest severity;
//   - every active alert is posted again each window with endsAt a hold time ahead (as Prometheus
//     re-sends firing alerts), so Alertmanager resolves it by itself if serve stops;
//   - an alert whose finding the new window no longer reports is posted once more with
//     endsAt = now, which resolves it at once; so is the old label set when a finding's labels
//     change (its severity rose): Alertmanager identifies an alert by its labels.
// A window that could not be analysed resolves nothing (it saw nothing). Job lifecycle events
// (job_started, job_ended) are not conditions and are not alerted on. Posting is
// service/alert_sender.h's; this file decides what to post.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "service/snapshot.h"

namespace prism::service {

struct Alert {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  int64_t starts_at_wall_ns = 0;
  int64_t ends_at_wall_ns = 0;
  bool resolved = false;  // endsAt is the time it was resolved
};

// By stable key (AlertKey).
using ActiveAlerts = std::map<std::string, Alert>;

struct AlertWindow {
  std::vector<const StoredFinding*> findings;  // those the window reported (new or updated)
  bool analysed = true;                        // false: the window failed; nothing resolves
  int64_t now_wall_ns = 0;
  int64_t hold_ns = 0;  // endsAt of an active alert = now + hold
};

struct AlertUpdate {
  ActiveAlerts active;      // after this window
  std::vector<Alert> post;  // firing (re-)posts and resolutions, by key
};

// kind|job|gpus|switches|hosts: the identity of an alert across windows.
std::string AlertKey(const output::ReportFinding& f);

// Whether a finding kind is alerted on (not the job lifecycle events).
bool IsAlertable(diagnosis::FindingKind kind);

// The alert of one finding: labels alertname="llmprism_<kind>", kind, severity, job, gpu / switch
// / link / host where the finding names them; annotations summary (the finding's text),
// description (its evidence: metric, value against baseline, event times) and finding_id.
// startsAt is the finding's event start, never later than now.
Alert BuildAlert(const StoredFinding& f, int64_t now_wall_ns, int64_t hold_ns);

AlertUpdate NextAlerts(const ActiveAlerts& previous, const AlertWindow& window);

// The Alertmanager POST /api/v2/alerts body: a JSON array of postable alerts.
nlohmann::json AlertsToJson(const std::vector<Alert>& alerts);

// RFC 3339 UTC with milliseconds, e.g. "2026-12-01T18:22:07.123Z".
std::string Rfc3339(int64_t wall_ns);

}  // namespace prism::service
