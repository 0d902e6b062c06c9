#include "service/http_api.h"

#include "service/api_json.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace prism::service {
namespace {

TEST(TokenMatches, OnlyTheExactBearerToken) {
  EXPECT_TRUE(TokenMatches("Bearer abc123", "abc123"));
  EXPECT_FALSE(TokenMatches("Bearer abc124", "abc123"));   // last byte
  EXPECT_FALSE(TokenMatches("Bearer bbc123", "abc123"));   // first byte
  EXPECT_FALSE(TokenMatches("Bearer abc12", "abc123"));    // a prefix
  EXPECT_FALSE(TokenMatches("Bearer abc1234", "abc123"));  // longer
  EXPECT_FALSE(TokenMatches("bearer abc123", "abc123"));
  EXPECT_FALSE(TokenMatches("", "abc123"));
  EXPECT_FALSE(TokenMatches("abc123", "abc123"));
  // A header with a NUL where the token ends must not match a shorter expected value.
  EXPECT_FALSE(TokenMatches(std::string_view("Bearer abc123\0", 14), "abc123"));
}

TEST(ParseApiTime, NsSecondsAndRefusals) {
  EXPECT_EQ(ParseApiTime("1700000000"), 1'700'000'000'000'000'000);
  EXPECT_EQ(ParseApiTime("1700000000000000000"), 1'700'000'000'000'000'000);
  EXPECT_EQ(ParseApiTime("1700000000.5"), 1'700'000'000'500'000'000);
  EXPECT_EQ(ParseApiTime("-5"), -5'000'000'000);
  EXPECT_EQ(ParseApiTime("1.7e9"), 1'700'000'000'000'000'000);
  for (const char* bad : {"", "1e300", "-1e300", "nan", "inf", "abc", "12abc",
                          "99999999999999999999", "9300000000", "1e10"}) {
    EXPECT_FALSE(ParseApiTime(bad)) << bad;
  }
}

// A stored finding round-trips with its kind's name; one of a kind this version does not know is
// refused (the store counts it as a bad row) rather than read as some other kind.
TEST(FindingFromJson, KindByNameAndUnknownKindsRefused) {
  StoredFinding f;
  f.id = 7;
  f.finding.kind = diagnosis::FindingKind::kDegradedSwitch;
  nlohmann::json j = FindingToJson(f);
  EXPECT_EQ(j["kind"], "degraded_switch");
  auto back = FindingFromJson(j);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->finding.kind, diagnosis::FindingKind::kDegradedSwitch);
  j["kind"] = "degraded_toaster";
  EXPECT_FALSE(FindingFromJson(j));
}


// A service with one source of each kind, HTTP counters, an Alertmanager, two jobs and findings:
// every family of /metrics has something to say.
struct MetricsFixture {
  SnapshotHolder snapshots;
  SourceCounters udp, capture, watch;
  PipelineCounters pipeline;
  HttpCounters http;
  std::unique_ptr<AlertSender> alerts;
  ApiContext ctx;

  MetricsFixture() {
    udp.name = "udp:127.0.0.1:4739";
    udp.kind = "ipfix-udp";
    udp.records = 1000;
    udp.datagrams = 40;
    udp.datagrams_refused = 2;
    udp.dropped_late = 7;
    udp.dropped_queue_full = 3;
    Stats st;
    st.Add(Stat::collector_datagrams_dropped, 5);
    st.Add(Stat::ipfix_bad_set, 4);
    udp.MergeStats(st);
    capture.name = "capture:lo";
    capture.kind = "capture";
    capture.packets = 321;
    capture.kernel_drops = 9;
    watch.name = "dir:/tmp/\"flows\"";
    watch.kind = "watch";
    watch.records = 55;
    pipeline.memory_limit_bytes = 1 << 30;
    pipeline.buffer_bytes = 4096;
    pipeline.buffer_records = 12;
    pipeline.windows_shortened = 1;
    pipeline.windows_skipped = 2;
    pipeline.max_event_ns = 15'500'000'000;
    http.open = 1;
    http.accepted = 17;
    http.refused = 1;
    http.idle_closed = 3;
    AlertSenderOptions ao;
    ao.urls = {"http://127.0.0.1:1"};
    alerts = std::move(*AlertSender::Start(ao));
    alerts->targets()[0]->posts_failed = 4;

    auto snap = std::make_shared<Snapshot>();
    snap->windows_analysed = 3;
    snap->window_end_ns = 12'000'000'000;
    snap->analysis_seconds = 0.25;
    JobState a;
    a.id = "job1";
    a.gpus.resize(8);
    a.steps.push_back({0, 1, 1.5});
    a.step_time.steps = 10;
    a.step_time.p99_s = 1.75;
    JobState b;
    b.id = "job2";
    b.active = false;
    snap->jobs = {a, b};
    snap->finding_raises[{"straggler", "warning"}] = 2;
    snap->switch_bandwidth_relative["leaf3"] = 0.3;
    snap->switch_dp_bandwidth.push_back({"leaf3", 40, 1.25e9, 0.3});
    snapshots.Publish(snap);

    ctx.snapshots = &snapshots;
    ctx.sources = {&udp, &capture, &watch};
    ctx.pipeline = &pipeline;
    ctx.queue_size = [] { return size_t{6}; };
    ctx.has_store = true;
    ctx.http = &http;
    ctx.alerts = alerts.get();
  }
  ~MetricsFixture() { alerts->Stop(); }
};

bool HasLine(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

TEST(RenderMetrics, EveryFamilyDeclaredBeforeItsSamples) {
  MetricsFixture f;
  const std::string text = RenderMetrics(f.ctx);
  if (const char* dump = std::getenv("PRISM_METRICS_DUMP")) std::ofstream(dump) << text;
  std::istringstream in(text);
  std::string family;
  size_t samples = 0;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("# HELP ", 0) == 0) continue;
    if (l.rfind("# TYPE ", 0) == 0) {
      family = l.substr(7, l.find(' ', 7) - 7);
      continue;
    }
    ++samples;
    const std::string name = l.substr(0, l.find_first_of("{ "));
    EXPECT_EQ(name, family) << l;
  }
  EXPECT_GT(samples, 40u);
}

TEST(RenderMetrics, SamplesBySourceKindAndState) {
  MetricsFixture f;
  const std::string m = RenderMetrics(f.ctx);
  EXPECT_TRUE(HasLine(m, R"(llmprism_records_ingested_total{source="udp:127.0.0.1:4739"} 1000)"));
  EXPECT_TRUE(HasLine(m, R"(llmprism_records_ingested_total{source="dir:/tmp/\"flows\""} 55)"));
  EXPECT_TRUE(HasLine(
      m, R"(llmprism_records_dropped_total{source="udp:127.0.0.1:4739",reason="late"} 7)"));
  // Bad records leave out the datagrams the collector queue dropped (counted as datagrams).
  EXPECT_TRUE(HasLine(m, R"(llmprism_records_bad_total{source="udp:127.0.0.1:4739"} 4)"));
  EXPECT_TRUE(HasLine(
      m, R"(llmprism_datagrams_dropped_total{source="udp:127.0.0.1:4739",reason="queue_full"} 5)"));
  EXPECT_TRUE(HasLine(m, R"(llmprism_datagrams_refused_total{source="udp:127.0.0.1:4739"} 2)"));
  EXPECT_EQ(m.find(R"(llmprism_datagrams_received_total{source="capture:lo"})"), std::string::npos);
  EXPECT_TRUE(HasLine(m, R"(llmprism_capture_kernel_drops_total{source="capture:lo"} 9)"));
  EXPECT_EQ(m.find(R"(llmprism_capture_packets_total{source="udp)"), std::string::npos);
  EXPECT_TRUE(HasLine(m, R"(llmprism_http_connections_total{outcome="accepted"} 17)"));
  EXPECT_TRUE(HasLine(
      m, R"(llmprism_alertmanager_posts_total{url="http://127.0.0.1:1",outcome="failed"} 4)"));
  EXPECT_TRUE(HasLine(m, "llmprism_store_ok 1"));
  EXPECT_TRUE(HasLine(m, "llmprism_queue_records 6"));
  EXPECT_TRUE(HasLine(m, "llmprism_window_lag_seconds 3.5"));
  EXPECT_TRUE(HasLine(m, R"(llmprism_jobs{state="active"} 1)"));
  EXPECT_TRUE(HasLine(m, R"(llmprism_jobs{state="ended"} 1)"));
  EXPECT_TRUE(HasLine(m, R"(llmprism_job_step_seconds_p99{job="job1"} 1.75)"));
  EXPECT_EQ(m.find(R"(llmprism_job_gpus{job="job2"})"), std::string::npos);  // ended
  EXPECT_TRUE(HasLine(m, R"(llmprism_findings_total{kind="straggler",severity="warning"} 2)"));
  EXPECT_TRUE(HasLine(m, R"(llmprism_switch_dp_bandwidth_ratio{switch="leaf3"} 0.3000)"));
  EXPECT_EQ(m.find("llmprism_stream_"), std::string::npos);  // one process: no stream
}

TEST(RenderMetrics, StreamRoles) {
  MetricsFixture f;
  f.pipeline.stream_role = "analyser";
  f.pipeline.stream_next_sequence = 5;  // read up to 4 of 9
  f.pipeline.stream_last_sequence = 9;
  f.pipeline.stream_already_analysed = 352;
  f.pipeline.stream_redelivered = 3;
  std::string m = RenderMetrics(f.ctx);
  EXPECT_TRUE(HasLine(m, "llmprism_stream_redelivered_messages_total 3"));
  EXPECT_TRUE(HasLine(m, "llmprism_stream_lag_messages 5"));
  EXPECT_TRUE(HasLine(m, "llmprism_stream_records_already_analysed_total 352"));
  EXPECT_EQ(m.find("llmprism_stream_published"), std::string::npos);
  f.pipeline.stream_next_sequence = 10;
  EXPECT_TRUE(HasLine(RenderMetrics(f.ctx), "llmprism_stream_lag_messages 0"));

  f.pipeline.stream_role = "collector";
  f.pipeline.published_records = 4832;
  f.pipeline.publish_errors = 2;
  f.pipeline.publish_held_records = 200;
  m = RenderMetrics(f.ctx);
  EXPECT_TRUE(HasLine(m, "llmprism_stream_published_records_total 4832"));
  EXPECT_TRUE(HasLine(m, "llmprism_stream_publish_errors_total 2"));
  EXPECT_TRUE(HasLine(m, "llmprism_stream_held_records 200"));
  EXPECT_EQ(m.find("llmprism_stream_lag_messages"), std::string::npos);
}

TEST(RenderMetrics, FabricStage) {
  MetricsFixture f;
  f.pipeline.stream_role = "analyser";
  std::string m = RenderMetrics(f.ctx);
  EXPECT_EQ(m.find("llmprism_fabric_"), std::string::npos);  // no --fabric-stage
  f.pipeline.fabric_publishing = true;
  f.pipeline.fabric_published = 6;
  f.pipeline.fabric_published_empty = 2;
  m = RenderMetrics(f.ctx);
  EXPECT_TRUE(HasLine(m, "llmprism_fabric_contributions_published_total 6"));
  EXPECT_TRUE(HasLine(m, "llmprism_fabric_empty_contributions_published_total 2"));
  EXPECT_TRUE(HasLine(m, "llmprism_fabric_empty_windows_unlisted_total 0"));
  EXPECT_TRUE(HasLine(m, "llmprism_fabric_contributions_given_up_total 0"));

  f.pipeline.stream_role = "fabric";
  f.pipeline.fabric_received = 12;
  f.pipeline.fabric_received_empty = 3;
  f.pipeline.fabric_windows_judged = 5;
  f.pipeline.fabric_windows_incomplete = 1;
  f.pipeline.fabric_pending_windows = 1;
  f.pipeline.stream_next_sequence = 13;
  f.pipeline.stream_last_sequence = 14;
  m = RenderMetrics(f.ctx);
  EXPECT_TRUE(HasLine(m, "llmprism_fabric_contributions_received_total 12"));
  EXPECT_TRUE(HasLine(m, "llmprism_fabric_contributions_empty_total 3"));
  EXPECT_TRUE(HasLine(m, "llmprism_fabric_windows_judged_total 5"));
  EXPECT_TRUE(HasLine(m, "llmprism_fabric_windows_judged_incomplete_total 1"));
  EXPECT_TRUE(HasLine(m, "llmprism_fabric_windows_pending 1"));
  EXPECT_TRUE(HasLine(m, "llmprism_stream_lag_messages 2"));
  EXPECT_EQ(m.find("llmprism_fabric_contributions_published_total"), std::string::npos);
}

TEST(RenderMetrics, ShardLeases) {
  MetricsFixture f;
  f.pipeline.stream_role = "analyser";
  std::string m = RenderMetrics(f.ctx);
  EXPECT_EQ(m.find("llmprism_shards_held"), std::string::npos);  // given a subject: no leases
  f.pipeline.stream_leases = true;
  f.pipeline.stream_lease_lag = 7;  // the held shards' consumers', not the sequences'
  f.pipeline.shards_held = 2;
  f.pipeline.shard_leases_taken = 3;
  f.pipeline.shard_takeovers = 1;
  m = RenderMetrics(f.ctx);
  EXPECT_TRUE(HasLine(m, "llmprism_stream_lag_messages 7"));
  EXPECT_TRUE(HasLine(m, "llmprism_shards_held 2"));
  EXPECT_TRUE(HasLine(m, "llmprism_shard_leases_taken_total 3"));
  EXPECT_TRUE(HasLine(m, "llmprism_shard_takeovers_total 1"));
  EXPECT_TRUE(HasLine(m, "llmprism_shard_leases_lost_total 0"));
}

// By lease each shard has its own consumer and sequence: /api/v1/ingest lists them, and the one
// next/last sequence is null instead of a 0 that reads as "nothing read".
TEST(IngestJson, ShardLeasesListTheShardsPositions) {
  MetricsFixture f;
  f.pipeline.stream_role = "analyser";
  f.pipeline.stream_next_sequence = 5;
  f.pipeline.stream_last_sequence = 9;
  nlohmann::json stream = IngestJson(f.ctx)["stream"];
  EXPECT_EQ(stream["next_sequence"], 5);  // given a subject: one sequence
  EXPECT_FALSE(stream.contains("shards"));
  f.pipeline.stream_leases = true;
  f.pipeline.SetShardPositions({{0, 120, 3}, {2, 88, 0}});
  stream = IngestJson(f.ctx)["stream"];
  EXPECT_TRUE(stream["next_sequence"].is_null());
  EXPECT_TRUE(stream["last_sequence"].is_null());
  ASSERT_EQ(stream["shards"].size(), 2u);
  EXPECT_EQ(stream["shards"][0], (nlohmann::json{{"shard", 0}, {"next_sequence", 120},
                                                {"lag_messages", 3}}));
  EXPECT_EQ(stream["shards"][1]["shard"], 2);
  EXPECT_EQ(stream["shards"][1]["next_sequence"], 88);
}

}  // namespace
}  // namespace prism::service
