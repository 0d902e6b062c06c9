#include "service/alerts.h"

#include <gtest/gtest.h>

#include "service/alert_sender.h"

namespace prism::service {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kNow = 1'800'000'000 * kSec;  // wall clock of the first window
constexpr int64_t kHold = 60 * kSec;

StoredFinding Straggler(int64_t id, diagnosis::Severity severity = diagnosis::Severity::kWarning,
                        const std::string& gpu = "10.0.210.6") {
  StoredFinding s;
  s.id = id;
  s.finding.kind = diagnosis::FindingKind::kStragglerGpu;
  s.finding.severity = severity;
  s.finding.job = "job2";
  s.finding.gpus = {*IpAddr::Parse(gpu)};
  s.finding.start_ns = 1'700'000'015 * kSec;
  s.finding.end_ns = 1'700'000'030 * kSec;
  s.finding.metric = "compute_s";
  s.finding.value = 1.3;
  s.finding.baseline = 1.0;
  s.finding.sigma = 0.02;
  s.finding.units = 3;
  s.finding.cause = diagnosis::Cause::kGpu;
  s.finding.summary = "GPU " + gpu + " computes 1.3x slower";
  s.first_window_end_ns = 1'700'000'035 * kSec;
  s.windows = 1;
  return s;
}

AlertWindow Window(std::vector<const StoredFinding*> findings, int64_t now, bool analysed = true) {
  AlertWindow w;
  w.findings = std::move(findings);
  w.now_wall_ns = now;
  w.hold_ns = kHold;
  w.analysed = analysed;
  return w;
}

TEST(AlertsTest, FindingFiresWithLabelsAndEvidence) {
  const StoredFinding f = Straggler(7);
  const AlertUpdate u = NextAlerts({}, Window({&f}, kNow));
  ASSERT_EQ(u.post.size(), 1u);
  ASSERT_EQ(u.active.size(), 1u);
  const Alert& a = u.post[0];
  EXPECT_FALSE(a.resolved);
  EXPECT_EQ(a.labels.at("alertname"), "llmprism_straggler_gpu");
  EXPECT_EQ(a.labels.at("kind"), "straggler_gpu");
  EXPECT_EQ(a.labels.at("severity"), "warning");
  EXPECT_EQ(a.labels.at("job"), "job2");
  EXPECT_EQ(a.labels.at("gpu"), "10.0.210.6");
  EXPECT_EQ(a.labels.count("switch"), 0u);
  EXPECT_EQ(a.annotations.at("summary"), "GPU 10.0.210.6 computes 1.3x slower");
  EXPECT_NE(a.annotations.at("description").find("compute_s 1.3 against baseline 1"),
            std::string::npos)
      << a.annotations.at("description");
  EXPECT_EQ(a.annotations.at("finding_id"), "7");
  EXPECT_EQ(a.starts_at_wall_ns, f.finding.start_ns);  // the event time it began
  EXPECT_EQ(a.ends_at_wall_ns, kNow + kHold);
}

TEST(AlertsTest, ActiveAlertIsResentThenResolvedWhenTheFindingIsGone) {
  const StoredFinding f = Straggler(7);
  AlertUpdate u = NextAlerts({}, Window({&f}, kNow));
  // The next window reports it again (merged into the same finding): re-posted, endsAt ahead.
  u = NextAlerts(u.active, Window({&f}, kNow + 5 * kSec));
  ASSERT_EQ(u.post.size(), 1u);
  EXPECT_FALSE(u.post[0].resolved);
  EXPECT_EQ(u.post[0].ends_at_wall_ns, kNow + 5 * kSec + kHold);
  EXPECT_EQ(u.post[0].starts_at_wall_ns, f.finding.start_ns);
  // A window without it: posted once more, resolved now, and no longer active.
  u = NextAlerts(u.active, Window({}, kNow + 10 * kSec));
  ASSERT_EQ(u.post.size(), 1u);
  EXPECT_TRUE(u.post[0].resolved);
  EXPECT_EQ(u.post[0].ends_at_wall_ns, kNow + 10 * kSec);
  EXPECT_EQ(u.post[0].labels.at("gpu"), "10.0.210.6");
  EXPECT_TRUE(u.active.empty());
  // And nothing more after that.
  u = NextAlerts(u.active, Window({}, kNow + 15 * kSec));
  EXPECT_TRUE(u.post.empty());
}

TEST(AlertsTest, NewFindingOfTheSameSubjectContinuesTheAlert) {
  // The tracker may open a new finding (new id) for the same GPU: the alert's key is kind, job
  // and subject, so it keeps firing with its first start.
  const StoredFinding a = Straggler(7);
  StoredFinding b = Straggler(9);
  b.finding.start_ns += 40 * kSec;
  AlertUpdate u = NextAlerts({}, Window({&a}, kNow));
  u = NextAlerts(u.active, Window({&b}, kNow + 5 * kSec));
  ASSERT_EQ(u.post.size(), 1u);
  EXPECT_FALSE(u.post[0].resolved);
  EXPECT_EQ(u.post[0].starts_at_wall_ns, a.finding.start_ns);
  EXPECT_EQ(u.post[0].annotations.at("finding_id"), "9");
}

TEST(AlertsTest, TwoFindingsOfOneKeyAreOneAlertAtTheHigherSeverity) {
  const StoredFinding warn = Straggler(1, diagnosis::Severity::kWarning);
  StoredFinding crit = Straggler(2, diagnosis::Severity::kCritical);
  crit.finding.metric = "late_collective_s";  // another rule, same GPU
  const AlertUpdate u = NextAlerts({}, Window({&warn, &crit}, kNow));
  ASSERT_EQ(u.post.size(), 1u);
  EXPECT_EQ(u.post[0].labels.at("severity"), "critical");
}

TEST(AlertsTest, RaisedSeverityResolvesTheOldLabelSet) {
  const StoredFinding warn = Straggler(1, diagnosis::Severity::kWarning);
  const StoredFinding crit = Straggler(1, diagnosis::Severity::kCritical);
  AlertUpdate u = NextAlerts({}, Window({&warn}, kNow));
  u = NextAlerts(u.active, Window({&crit}, kNow + 5 * kSec));
  ASSERT_EQ(u.post.size(), 2u);
  int resolved = 0, firing = 0;
  for (const Alert& a : u.post) {
    if (a.resolved) {
      ++resolved;
      EXPECT_EQ(a.labels.at("severity"), "warning");
      EXPECT_EQ(a.ends_at_wall_ns, kNow + 5 * kSec);
    } else {
      ++firing;
      EXPECT_EQ(a.labels.at("severity"), "critical");
      EXPECT_EQ(a.starts_at_wall_ns, warn.finding.start_ns);
    }
  }
  EXPECT_EQ(resolved, 1);
  EXPECT_EQ(firing, 1);
  EXPECT_EQ(u.active.size(), 1u);
}

TEST(AlertsTest, WindowNotAnalysedResolvesNothing) {
  const StoredFinding f = Straggler(7);
  AlertUpdate u = NextAlerts({}, Window({&f}, kNow));
  StoredFinding failed;
  failed.id = 8;
  failed.finding.kind = diagnosis::FindingKind::kTelemetryLoss;
  failed.finding.severity = diagnosis::Severity::kWarning;
  failed.finding.metric = "window_not_analysed";
  u = NextAlerts(u.active, Window({&failed}, kNow + 5 * kSec, /*analysed=*/false));
  ASSERT_EQ(u.post.size(), 2u);
  for (const Alert& a : u.post) EXPECT_FALSE(a.resolved) << a.labels.at("kind");
  EXPECT_EQ(u.active.size(), 2u);
}

TEST(AlertsTest, JobLifecycleEventsAreNotAlerts) {
  StoredFinding started;
  started.finding.kind = diagnosis::FindingKind::kJobStarted;
  started.finding.job = "job0";
  EXPECT_TRUE(NextAlerts({}, Window({&started}, kNow)).post.empty());
}

TEST(AlertsTest, LinkAndSwitchLabels) {
  StoredFinding link;
  link.finding.kind = diagnosis::FindingKind::kCongestedLink;
  link.finding.switches = {"leaf-p000-r2", "spine05"};
  StoredFinding sw;
  sw.finding.kind = diagnosis::FindingKind::kDegradedSwitch;
  sw.finding.switches = {"spine03"};
  StoredFinding access;
  access.finding.kind = diagnosis::FindingKind::kDegradedLink;
  access.finding.switches = {"leaf-p001-r1"};
  access.finding.gpus = {*IpAddr::Parse("10.0.0.9")};
  const AlertUpdate u = NextAlerts({}, Window({&link, &sw, &access}, kNow));
  ASSERT_EQ(u.post.size(), 3u);
  std::map<std::string, Alert> by_kind;
  for (const Alert& a : u.post) by_kind[a.labels.at("kind")] = a;
  EXPECT_EQ(by_kind["congested_link"].labels.at("link"), "leaf-p000-r2<->spine05");
  EXPECT_EQ(by_kind["congested_link"].labels.count("switch"), 0u);
  EXPECT_EQ(by_kind["degraded_switch"].labels.at("switch"), "spine03");
  EXPECT_EQ(by_kind["degraded_link"].labels.at("link"), "leaf-p001-r1<->10.0.0.9");
  EXPECT_EQ(by_kind["degraded_link"].labels.at("gpu"), "10.0.0.9");
  EXPECT_EQ(by_kind["degraded_switch"].labels.count("job"), 0u);  // no job: no label
}

TEST(AlertsTest, SchedulerJobLabels) {
  StoredFinding f = Straggler(7);
  EXPECT_EQ(NextAlerts({}, Window({&f}, kNow)).post.at(0).labels.count("scheduler_job"), 0u);
  f.finding.scheduler = {"7001", "alice", "llama-pretrain"};
  const Alert a = NextAlerts({}, Window({&f}, kNow)).post.at(0);
  EXPECT_EQ(a.labels.at("scheduler_job"), "7001");
  EXPECT_EQ(a.labels.at("user"), "alice");
  EXPECT_EQ(a.annotations.at("scheduler_job_name"), "llama-pretrain");
}

TEST(AlertsTest, StartNeverAfterNow) {
  StoredFinding f = Straggler(1);
  f.finding.start_ns = kNow + 3600 * kSec;  // a record clock ahead of this machine's
  const Alert a = NextAlerts({}, Window({&f}, kNow)).post.at(0);
  EXPECT_LT(a.starts_at_wall_ns, a.ends_at_wall_ns);
  EXPECT_LE(a.starts_at_wall_ns, kNow);
}

TEST(AlertsTest, JsonBody) {
  const StoredFinding f = Straggler(7);
  const AlertUpdate u = NextAlerts({}, Window({&f}, kNow));
  const nlohmann::json j = AlertsToJson(u.post);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["labels"]["alertname"], "llmprism_straggler_gpu");
  EXPECT_EQ(j[0]["startsAt"], "2023-11-14T22:13:35.000Z");
  EXPECT_EQ(j[0]["endsAt"], Rfc3339(kNow + kHold));
  EXPECT_EQ(Rfc3339(1'800'000'000 * kSec + 123'456'789), "2027-01-15T08:00:00.123Z");
}

TEST(AlertsTest, ParseAlertmanagerUrl) {
  auto u = ParseAlertmanagerUrl("http://127.0.0.1:9093");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->base, "http://127.0.0.1:9093");
  EXPECT_EQ(u->path_prefix, "");
  u = ParseAlertmanagerUrl("https://am.example.org/alertmanager/");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->base, "https://am.example.org");
  EXPECT_EQ(u->path_prefix, "/alertmanager");
  EXPECT_FALSE(ParseAlertmanagerUrl("127.0.0.1:9093"));
  EXPECT_FALSE(ParseAlertmanagerUrl("ftp://host"));
  EXPECT_FALSE(ParseAlertmanagerUrl("http://host:99999"));
  EXPECT_FALSE(ParseAlertmanagerUrl("http://"));
}

}  // namespace
}  // namespace prism::service
