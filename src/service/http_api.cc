#include "service/http_api.h"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <cstring>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "diagnosis/finding.h"
#include "output/html_assets.h"
#include "output/report_json.h"
#include "service/api_json.h"
#include "service/dashboard.h"
#include "service/loss_tally.h"
#include "service/window_loss.h"

namespace prism::service {

using nlohmann::json;

namespace {

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SendJson(httplib::Response& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, json{{"error", message}}, status);
}

// A positive count (limit=): digits only, at most 1e9 ("-1" must not wrap to "unlimited").
std::optional<size_t> ParseCount(const std::string& s) {
  if (s.empty() || s.size() > 10 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (v == 0 || v > 1'000'000'000ULL) return std::nullopt;
  return static_cast<size_t>(v);
}

std::string Escape(const std::string& v) {  // Prometheus label value
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

json IngestJson(const ApiContext& ctx) {
  json sources = json::array();
  for (const SourceCounters* s : ctx.sources) {
    Stats st = s->GetStats();
    json counters = json::object();
    for (size_t i = 0; i < st.values().size(); ++i) {
      if (st.values()[i] != 0) counters[kStatInfo[i].name] = st.values()[i];
    }
    json o{{"name", s->name},
           {"kind", s->kind},
           {"records", s->records.load()},
           {"accepted", s->accepted.load()},
           {"dropped", {{"queue_full", s->dropped_queue_full.load()},
                        {"late", s->dropped_late.load()},
                        {"buffer_full", s->dropped_buffer_full.load()},
                        {"implausible_time", s->dropped_implausible.load()}}},
           {"bad", st.SkippedTotal() - st.Get(Stat::collector_datagrams_dropped)},
           {"counters", counters},
           {"last_record_wall_ns", s->last_record_wall_ns.load()}};
    if (s->is_udp()) {
      o["port"] = s->udp_port;
      o["datagrams"] = s->datagrams.load();
      o["datagrams_refused"] = s->datagrams_refused.load();
      o["datagrams_dropped"] = st.Get(Stat::collector_datagrams_dropped);
      o["socket_drops"] = UdpSocketDrops(s->udp_port);
    } else if (s->kind == "capture") {
      o["packets"] = s->packets.load();
      o["kernel_drops"] = s->kernel_drops.load();
      o["filter"] = s->capture_filter;
    } else {
      o["files"] = s->files.load();
    }
    sources.push_back(std::move(o));
  }
  const PipelineCounters& p = *ctx.pipeline;
  json stream = nullptr;  // the one-process serve has no stream
  if (p.stream_role == "collector") {
    stream = json{{"role", p.stream_role},
                  {"published_records", p.published_records.load()},
                  {"published_batches", p.published_batches.load()},
                  {"publish_errors", p.publish_errors.load()},
                  {"held_records", p.publish_held_records.load()},
                  {"lost_records", p.publish_lost_records.load()},
                  {"unrouted_records", p.unrouted_records.load()},
                  {"shard_map_gpus", p.shard_map_gpus.load()}};
  } else if (p.stream_role == "analyser") {
    stream = json{{"role", p.stream_role},
                  {"next_sequence", p.stream_next_sequence.load()},
                  {"last_sequence", p.stream_last_sequence.load()},
                  {"lag_messages", p.stream_lag_messages()},
                  {"records_already_analysed", p.stream_already_analysed.load()},
                  {"reconnects", p.stream_reconnects.load()},
                  {"redelivered_messages", p.stream_redelivered.load()}};
    if (p.stream_leases) {
      stream["next_sequence"] = stream["last_sequence"] = nullptr;  // per shard, below
      json shards = json::array();
      for (const PipelineCounters::ShardPosition& sp : p.ShardPositions()) {
        shards.push_back(json{{"shard", sp.shard},
                              {"next_sequence", sp.next_sequence},
                              {"lag_messages", sp.lag_messages}});
      }
      stream["shards"] = std::move(shards);
      stream["shards_held"] = p.shards_held.load();
      stream["shard_leases_taken"] = p.shard_leases_taken.load();
      stream["shard_takeovers"] = p.shard_takeovers.load();
      stream["shard_leases_lost"] = p.shard_leases_lost.load();
      stream["records_left_to_other_holder"] = p.records_left_to_other_holder.load();
    }
    if (p.fabric_publishing) {
      stream["fabric"] = json{{"published", p.fabric_published.load()},
                              {"published_empty", p.fabric_published_empty.load()},
                              {"empty_windows_unlisted", p.fabric_empty_windows_unlisted.load()},
                              {"published_pieces", p.fabric_published_pieces.load()},
                              {"published_bytes", p.fabric_published_bytes.load()},
                              {"publish_errors", p.fabric_publish_errors.load()},
                              {"given_up", p.fabric_publish_given_up.load()},
                              {"records_not_answered", p.fabric_records_not_answered.load()}};
    }
  } else if (p.stream_role == "fabric") {
    stream = json{{"role", p.stream_role},
                  {"shards", p.fabric_shards},
                  {"next_sequence", p.stream_next_sequence.load()},
                  {"last_sequence", p.stream_last_sequence.load()},
                  {"lag_messages", p.stream_lag_messages()},
                  {"contributions_received", p.fabric_received.load()},
                  {"contributions_empty", p.fabric_received_empty.load()},
                  {"contribution_bytes", p.fabric_received_bytes.load()},
                  {"contributions_bad", p.fabric_bad.load()},
                  {"contributions_duplicate", p.fabric_duplicates.load()},
                  {"contributions_already_judged", p.fabric_already_judged.load()},
                  {"windows_pending", p.fabric_pending_windows.load()},
                  {"windows_judged", p.fabric_windows_judged.load()},
                  {"windows_judged_incomplete", p.fabric_windows_incomplete.load()},
                  {"judge_cpu_seconds", p.fabric_judge_cpu_seconds.load()}};
  }
  return json{{"sources", sources},
              {"stream", stream},
              {"queue", {{"records", ctx.queue_size ? ctx.queue_size() : 0},
                         {"capacity", ctx.queue_capacity}}},
              {"buffer_records", p.buffer_records.load()},
              {"max_event_ns", p.max_event_ns.load()},
              {"next_window_end_ns", p.next_window_end_ns.load()},
              {"windows_skipped", p.windows_skipped.load()},
              {"store_errors", p.store_errors.load()},
              {"buffer_bytes", p.buffer_bytes.load()},
              {"records_held", p.records_held.load()},
              {"records_late_partial", p.records_late_partial.load()},
              {"records_lost", TallyLoss(ctx.sources, p).records}};
}

std::optional<int64_t> ParseApiTime(const std::string& s) {
  if (s.empty()) return std::nullopt;
  // Seconds that still fit int64 once in ns (up to year 2262).
  constexpr double kMaxSeconds = 9.2e9;
  char* end = nullptr;
  if (s.find_first_of(".eE") == std::string::npos) {
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE) return std::nullopt;
    // Small values are seconds (anything before 1973 in ns is below 1e17).
    if (std::llabs(v) >= 100'000'000'000LL) return v;
    if (std::fabs(static_cast<double>(v)) > kMaxSeconds) return std::nullopt;
    return static_cast<int64_t>(v) * 1'000'000'000;
  }
  const double d = std::strtod(s.c_str(), &end);
  if (*end != '\0' || !std::isfinite(d) || std::fabs(d) > kMaxSeconds) return std::nullopt;
  return static_cast<int64_t>(std::llround(d * 1e9));
}

bool TokenMatches(std::string_view header, std::string_view token) {
  constexpr std::string_view kPrefix = "Bearer ";
  // Every byte of the expected value is compared whatever the header holds; only the lengths
  // (not secret: the header's is the client's own) decide early.
  const size_t expected = kPrefix.size() + token.size();
  unsigned diff = header.size() == expected ? 0u : 1u;
  for (size_t i = 0; i < expected; ++i) {
    const char want = i < kPrefix.size() ? kPrefix[i] : token[i - kPrefix.size()];
    const char got = i < header.size() ? header[i] : 0;
    diff |= static_cast<unsigned char>(want ^ got);
  }
  return diff == 0;
}

namespace {

// Why /api/v1/health is degraded: each loss, shortened or failed window recent enough
// (kDegradedHoldNs), and a database that cannot be written; empty when healthy.
json HealthReasons(const ApiContext& ctx, const LossTally& loss, int64_t now_wall_ns) {
  const PipelineCounters& p = *ctx.pipeline;
  auto recent = [&](int64_t wall_ns) {
    return wall_ns != 0 && now_wall_ns - wall_ns < kDegradedHoldNs;
  };
  json reasons = json::array();
  if (loss.Total() > 0 && recent(p.last_loss_wall_ns.load())) {
    std::string by;
    for (const auto& [reason, n] : loss.records) {
      if (n > 0) by += fmt::format("{}{} {}", by.empty() ? "" : ", ", reason, n);
    }
    reasons.push_back(fmt::format("telemetry lost: {} records dropped before analysis ({})",
                                  loss.Total(), by));
  }
  if (recent(p.last_shortened_wall_ns.load())) {
    reasons.push_back(fmt::format(
        "memory: {} windows cut shorter than {:.0f} s to fit --memory-limit ({:.0f} MB)",
        p.windows_shortened.load(), static_cast<double>(ctx.window_ns) / 1e9,
        static_cast<double>(p.memory_limit_bytes.load()) / 1e6));
  }
  if (recent(p.last_failed_wall_ns.load())) {
    reasons.push_back(fmt::format("analysis: {} windows not analysed (out of memory)",
                                  p.windows_failed.load()));
  }
  if (ctx.has_store && !p.store_ok.load()) {
    reasons.push_back(fmt::format(
        "store: cannot write the database: {}; {} findings, {} jobs and {} steps not yet saved "
        "(retried)",
        p.GetStoreError(), p.unsaved_findings.load(), p.unsaved_jobs.load(),
        p.unsaved_steps.load()));
  }
  return reasons;
}

// The recent windows analysed with records lost, cut short or failed.
json IncompleteWindowsJson(const std::vector<IncompleteWindow>& windows) {
  json incomplete = json::array();
  for (const IncompleteWindow& w : windows) {
    json j{{"start_ns", w.start_ns}, {"end_ns", w.end_ns}, {"records", w.records}};
    json l = json::object();
    for (const auto& [reason, n] : w.lost) {
      if (n > 0) l[reason] = n;
    }
    if (!l.empty()) j["records_lost"] = l;
    if (w.nominal_start_ns != w.start_ns) j["nominal_start_ns"] = w.nominal_start_ns;
    if (!w.failed.empty()) j["failed"] = w.failed;
    incomplete.push_back(std::move(j));
  }
  return incomplete;
}

}  // namespace

json HealthJson(const ApiContext& ctx, int64_t now_wall_ns) {
  auto s = ctx.snapshots->Get();
  const PipelineCounters& p = *ctx.pipeline;
  const LossTally loss = TallyLoss(ctx.sources, p);
  const json reasons = HealthReasons(ctx, loss, now_wall_ns);
  const json lost = loss.records;
  const json incomplete = IncompleteWindowsJson(s->recent_incomplete);
  json out{{"status", reasons.empty() ? "ok" : "degraded"},
           {"reasons", reasons},
           {"uptime_s", static_cast<double>(now_wall_ns - p.started_wall_ns) / 1e9},
           {"snapshot_version", s->version},
           {"windows_analysed", s->windows_analysed},
           {"window_start_ns", s->window_start_ns},
           {"window_end_ns", s->window_end_ns},
           {"window_s", static_cast<double>(ctx.window_ns) / 1e9},
           {"step_s", static_cast<double>(ctx.step_ns) / 1e9},
           {"jobs", s->jobs.size()},
           {"findings", s->findings.size()},
           {"loss", {{"records", lost},
                     {"total", loss.Total()},
                     {"ingested", loss.ingested},
                     {"accepted", loss.accepted},
                     {"socket_datagrams", loss.socket_datagrams},
                     {"collector_queue_datagrams", loss.collector_datagrams},
                     {"last_wall_ns", p.last_loss_wall_ns.load()}}},
           {"memory", {{"limit_bytes", p.memory_limit_bytes.load()},
                       {"buffer_bytes", p.buffer_bytes.load()},
                       {"buffer_limit_bytes", p.buffer_limit_bytes.load()},
                       {"window_record_limit", p.window_record_limit.load()},
                       {"windows_shortened", p.windows_shortened.load()}}},
           {"windows_failed", p.windows_failed.load()},
           {"windows_skipped", p.windows_skipped.load()},
           {"incomplete_windows", s->incomplete_windows},
           {"recent_incomplete_windows", incomplete}};
  const int64_t a0 = p.analysing_start_ns.load(), a1 = p.analysing_end_ns.load();
  out["analysing"] = a1 == 0 ? json(nullptr) : json{{"start_ns", a0}, {"end_ns", a1}};
  if (ctx.has_store) {
    out["store"] = {{"ok", p.store_ok.load()},
                    {"error", p.GetStoreError()},
                    {"unsaved_findings", p.unsaved_findings.load()},
                    {"unsaved_jobs", p.unsaved_jobs.load()},
                    {"unsaved_steps", p.unsaved_steps.load()},
                    {"errors", p.store_errors.load()}};
  }
  return out;
}

namespace {

// The /metrics text being written. Each family's HELP and TYPE lines go right before its samples:
// the exposition format wants a family's samples together, after its declaration.
struct MetricsText {
  std::string out;
  void Family(const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  // A family of one unlabelled sample.
  template <typename T>
  void Single(const char* name, const char* type, const char* help, const T& value) {
    Family(name, type, help);
    out += fmt::format("{} {}\n", name, value);
  }
};

// Records per source: decoded, dropped by reason, lost before analysis; and health in one gauge.
void RenderRecordMetrics(const ApiContext& ctx, MetricsText& m) {
  m.Family("llmprism_records_ingested_total", "counter",
           "Flow records decoded from each source (before queueing and windowing).");
  for (const SourceCounters* s : ctx.sources) {
    m.out += fmt::format("llmprism_records_ingested_total{{source=\"{}\"}} {}\n", Escape(s->name),
                         s->records.load());
  }
  m.Family("llmprism_records_dropped_total", "counter",
           "Flow records dropped: queue_full (ingest faster than windowing), late (older than "
           "every open window), buffer_full (the memory budget could not hold them), "
           "implausible_time (times far from their export time or the stream's clock).");
  for (const SourceCounters* s : ctx.sources) {
    const std::string src = Escape(s->name);
    const std::pair<const char*, uint64_t> reasons[] = {
        {"queue_full", s->dropped_queue_full.load()},
        {"late", s->dropped_late.load()},
        {"buffer_full", s->dropped_buffer_full.load()},
        {"implausible_time", s->dropped_implausible.load()}};
    for (const auto& [reason, n] : reasons) {
      m.out += fmt::format("llmprism_records_dropped_total{{source=\"{}\",reason=\"{}\"}} {}\n",
                           src, reason, n);
    }
  }
  m.Family("llmprism_records_lost_total", "counter",
           "Every record lost before analysis, all sources, by reason: socket and collector_queue "
           "are datagrams converted at the source's records per datagram.");
  const LossTally loss = TallyLoss(ctx.sources, *ctx.pipeline);
  for (const auto& [reason, n] : loss.records) {
    m.out += fmt::format("llmprism_records_lost_total{{reason=\"{}\"}} {}\n", reason, n);
  }
  m.Single("llmprism_health_degraded", "gauge",
           "1 while /api/v1/health says degraded (recent loss, shortened or failed windows, store "
           "errors), else 0.",
           HealthJson(ctx, WallNs())["status"] == "ok" ? 0 : 1);
}

// The memory budget and what it cost (windows shortened or not analysed), and the store.
void RenderMemoryMetrics(const ApiContext& ctx, MetricsText& m) {
  const PipelineCounters& pc = *ctx.pipeline;
  m.Single("llmprism_memory_limit_bytes", "gauge",
           "The memory budget (--memory-limit).",
           pc.memory_limit_bytes.load());
  m.Single("llmprism_buffer_bytes", "gauge",
           "Bytes of every buffered record segment (window buffer and windows in analysis).",
           pc.buffer_bytes.load());
  m.Single("llmprism_windows_shortened_total", "counter",
           "Windows cut shorter than --window to fit the memory budget.",
           pc.windows_shortened.load());
  m.Single("llmprism_windows_failed_total", "counter",
           "Windows that could not be analysed (out of memory); the service went on.",
           pc.windows_failed.load());
  if (ctx.has_store) {
    m.Single("llmprism_store_ok", "gauge",
             "1 when the last database write succeeded.",
             pc.store_ok.load() ? 1 : 0);
  }
}

// The HTTP server's own connections (only when it counts them).
void RenderHttpMetrics(const HttpCounters& h, MetricsText& m) {
  m.Single("llmprism_http_connections_open", "gauge",
           "HTTP connections being served or waiting for a worker (at most "
           "--http-max-connections).",
           h.open.load());
  m.Family("llmprism_http_connections_total", "counter",
           "HTTP connections accepted (served) or refused with 503 (over "
           "--http-max-connections).");
  m.out += fmt::format("llmprism_http_connections_total{{outcome=\"accepted\"}} {}\n",
                       h.accepted.load());
  m.out += fmt::format("llmprism_http_connections_total{{outcome=\"refused\"}} {}\n",
                       h.refused.load());
  m.Family("llmprism_http_connections_closed_total", "counter",
           "HTTP connections closed by the server: idle (no request within --http-idle-s, or "
           "yielding its worker to a waiting connection), slow (a request, or a TLS handshake, "
           "not whole within --http-request-s) or tls_failed (with --tls-cert: a failed TLS "
           "handshake, or plain HTTP sent to the HTTPS port).");
  const std::pair<const char*, uint64_t> reasons[] = {{"idle", h.idle_closed.load()},
                                                      {"slow", h.slow_closed.load()},
                                                      {"tls_failed", h.tls_failed.load()}};
  for (const auto& [reason, n] : reasons) {
    m.out += fmt::format("llmprism_http_connections_closed_total{{reason=\"{}\"}} {}\n", reason,
                         n);
  }
}

// Decoder data quality per source: bad records in all, and every non-zero counter by name.
// `stats` holds each source's Stats, in ctx.sources order.
void RenderInputQualityMetrics(const ApiContext& ctx, const std::vector<Stats>& stats,
                               MetricsText& m) {
  m.Family("llmprism_records_bad_total", "counter",
           "Input records, sets or messages skipped as malformed (sum of the data-loss counters).");
  for (size_t k = 0; k < ctx.sources.size(); ++k) {
    // Datagrams the collector queue dropped are loss, not bad input: they have their own family.
    m.out += fmt::format("llmprism_records_bad_total{{source=\"{}\"}} {}\n",
                         Escape(ctx.sources[k]->name),
                         stats[k].SkippedTotal() - stats[k].Get(Stat::collector_datagrams_dropped));
  }
  m.Family("llmprism_input_events_total", "counter",
           "Every non-zero input data-quality counter (core/stats.h names), by source.");
  for (size_t k = 0; k < ctx.sources.size(); ++k) {
    const Stats& st = stats[k];
    for (size_t i = 0; i < st.values().size(); ++i) {
      if (st.values()[i] == 0) continue;
      m.out += fmt::format("llmprism_input_events_total{{source=\"{}\",counter=\"{}\"}} {}\n",
                           Escape(ctx.sources[k]->name), kStatInfo[i].name, st.values()[i]);
    }
  }
}

// UDP sources: datagrams received, refused by --exporter-allow, dropped by queue or kernel.
void RenderDatagramMetrics(const ApiContext& ctx, const std::vector<Stats>& stats,
                           MetricsText& m) {
  m.Family("llmprism_datagrams_received_total", "counter", "UDP datagrams received, by source.");
  for (const SourceCounters* s : ctx.sources) {
    if (!s->is_udp()) continue;
    m.out += fmt::format("llmprism_datagrams_received_total{{source=\"{}\"}} {}\n",
                         Escape(s->name), s->datagrams.load());
  }
  m.Family("llmprism_datagrams_refused_total", "counter",
           "UDP datagrams refused unread: their source is outside --exporter-allow.");
  for (const SourceCounters* s : ctx.sources) {
    if (!s->is_udp()) continue;
    m.out += fmt::format("llmprism_datagrams_refused_total{{source=\"{}\"}} {}\n",
                         Escape(s->name), s->datagrams_refused.load());
  }
  m.Family("llmprism_datagrams_dropped_total", "counter",
           "UDP datagrams dropped: collector queue full (reason=\"queue_full\") or by the kernel "
           "socket buffer (reason=\"socket\").");
  for (size_t k = 0; k < ctx.sources.size(); ++k) {
    const SourceCounters* s = ctx.sources[k];
    if (!s->is_udp()) continue;
    m.out += fmt::format(
        "llmprism_datagrams_dropped_total{{source=\"{}\",reason=\"queue_full\"}} {}\n",
        Escape(s->name), stats[k].Get(Stat::collector_datagrams_dropped));
    m.out += fmt::format("llmprism_datagrams_dropped_total{{source=\"{}\",reason=\"socket\"}} {}\n",
                         Escape(s->name), UdpSocketDrops(s->udp_port));
  }
}

// Live captures: packets seen, and dropped by the kernel before libpcap read them.
void RenderCaptureMetrics(const ApiContext& ctx, MetricsText& m) {
  m.Family("llmprism_capture_packets_total", "counter",
           "Packets captured live (--capture), by source.");
  for (const SourceCounters* s : ctx.sources) {
    if (s->kind != "capture") continue;
    m.out += fmt::format("llmprism_capture_packets_total{{source=\"{}\"}} {}\n", Escape(s->name),
                         s->packets.load());
  }
  m.Family(
      "llmprism_capture_kernel_drops_total", "counter",
      "Packets of a live capture dropped by the kernel before libpcap read them (pcap_stats).");
  for (const SourceCounters* s : ctx.sources) {
    if (s->kind != "capture") continue;
    m.out += fmt::format("llmprism_capture_kernel_drops_total{{source=\"{}\"}} {}\n",
                         Escape(s->name), s->kernel_drops.load());
  }
}

// An analyser taking shards by lease (serve --take-shards).
void RenderShardLeaseMetrics(const PipelineCounters& p, MetricsText& m) {
  m.Single("llmprism_shards_held", "gauge", "Shards this analyser holds by lease and reads.",
           p.shards_held.load());
  m.Single("llmprism_shard_leases_taken_total", "counter",
           "Shard leases this analyser took (free, never held, or lapsed).",
           p.shard_leases_taken.load());
  m.Single("llmprism_shard_takeovers_total", "counter",
           "Shards taken over from an analyser whose lease lapsed (not renewed within the TTL).",
           p.shard_takeovers.load());
  m.Single("llmprism_shard_leases_lost_total", "counter",
           "Shard leases this analyser lost to another (it did not renew within the TTL).",
           p.shard_leases_lost.load());
  m.Single("llmprism_shard_records_left_to_other_holder_total", "counter",
           "Records of a shard lost since they were read, left out of this analyser's windows "
           "(the shard's new holder analyses them).",
           p.records_left_to_other_holder.load());
}

// The fabric stage (serve --role fabric): contributions read, windows judged.
void RenderFabricMetrics(const PipelineCounters& p, MetricsText& m) {
  m.Single("llmprism_stream_lag_messages", "gauge",
           "Fabric contributions in the stream that the fabric stage has not read yet.",
           p.stream_lag_messages());
  m.Single("llmprism_fabric_contributions_received_total", "counter",
           "Shard window contributions the fabric stage took.", p.fabric_received.load());
  m.Single("llmprism_fabric_contributions_empty_total", "counter",
           "Of those, empty ones: windows a shard had no record of (its jobs paused).",
           p.fabric_received_empty.load());
  m.Single("llmprism_fabric_contribution_bytes_total", "counter",
           "Bytes of the shard window contributions taken.", p.fabric_received_bytes.load());
  m.Single("llmprism_fabric_contributions_bad_total", "counter",
           "Messages of the fabric stream that were no contribution (skipped, logged).",
           p.fabric_bad.load());
  m.Single("llmprism_fabric_contributions_already_judged_total", "counter",
           "Contributions of windows judged already (read again after a restart, or too late).",
           p.fabric_already_judged.load());
  m.Single("llmprism_fabric_windows_pending", "gauge",
           "Windows waiting for some shards' contributions.", p.fabric_pending_windows.load());
  m.Single("llmprism_fabric_windows_judged_total", "counter",
           "Windows whose switches and links the fabric stage judged.",
           p.fabric_windows_judged.load());
  m.Single("llmprism_fabric_windows_judged_incomplete_total", "counter",
           "Windows judged without some shards' contributions (a telemetry_loss finding each).",
           p.fabric_windows_incomplete.load());
  m.Single("llmprism_fabric_judge_cpu_seconds_total", "counter",
           "CPU time of merging and judging the windows' contributions.",
           p.fabric_judge_cpu_seconds.load());
}

// Scale-out roles: a collector's publishing, an analyser's place in the stream and its lag.
void RenderStreamMetrics(const PipelineCounters& p, MetricsText& m) {
  if (p.stream_role == "collector") {
    m.Single("llmprism_stream_published_records_total", "counter",
             "Records a collector published to the stream (acknowledged by it).",
             p.published_records.load());
    m.Single("llmprism_stream_publish_errors_total", "counter",
             "Publish attempts the stream did not acknowledge (the batch is kept and retried).",
             p.publish_errors.load());
    m.Single("llmprism_stream_held_records", "gauge",
             "Records a collector holds that the stream has not taken yet.",
             p.publish_held_records.load());
    m.Single("llmprism_stream_unrouted_records_total", "counter",
             "Records of endpoints the shard map did not know, sent to the recogniser.",
             p.unrouted_records.load());
    m.Single("llmprism_shard_map_gpus", "gauge",
             "GPUs in the shard map a collector routing by job follows (0: not routing).",
             p.shard_map_gpus.load());
  } else if (p.stream_role == "analyser") {
    m.Single("llmprism_stream_lag_messages", "gauge",
             "Record batches in the stream that this analyser has not read yet.",
             p.stream_lag_messages());
    m.Single("llmprism_stream_records_already_analysed_total", "counter",
             "Records read again after a restart that only committed windows held (not lost).",
             p.stream_already_analysed.load());
    m.Single("llmprism_stream_reconnects_total", "counter",
             "Times the analyser set up its reading of the stream again (server lost).",
             p.stream_reconnects.load());
    m.Single("llmprism_stream_redelivered_messages_total", "counter",
             "Record batches the stream delivered again (read already, or delivery count > 1): "
             "read once, not lost.",
             p.stream_redelivered.load());
    if (p.stream_leases) RenderShardLeaseMetrics(p, m);
    if (p.fabric_publishing) {
      m.Single("llmprism_fabric_contributions_published_total", "counter",
               "Window fabric contributions this analyser published (--fabric-stage).",
               p.fabric_published.load());
      m.Single("llmprism_fabric_empty_contributions_published_total", "counter",
               "Of those, empty ones: windows with no record of this shard (its jobs paused).",
               p.fabric_published_empty.load());
      m.Single("llmprism_fabric_empty_windows_unlisted_total", "counter",
               "Windows of a gap too long to list (a clock far ahead): no contribution published "
               "(the fabric stage judges them without this shard).",
               p.fabric_empty_windows_unlisted.load());
      m.Single("llmprism_fabric_contributions_given_up_total", "counter",
               "Window fabric contributions the stream did not take after retrying (the fabric "
               "stage judges those windows without this shard).",
               p.fabric_publish_given_up.load());
      m.Single("llmprism_fabric_records_not_answered_total", "counter",
               "Shards held by lease: records left out of this analyser's contributions because "
               "their shard's previous holder committed and published the window.",
               p.fabric_records_not_answered.load());
    }
  } else if (p.stream_role == "fabric") {
    RenderFabricMetrics(p, m);
  }
}

// Records waiting between the stages: the record queue and the window buffer.
void RenderQueueMetrics(const ApiContext& ctx, MetricsText& m) {
  m.Single("llmprism_queue_records", "gauge",
           "Records waiting between ingest and windowing.",
           ctx.queue_size ? ctx.queue_size() : 0);
  m.Single("llmprism_buffer_records", "gauge",
           "Records held by the sliding-window buffer.",
           ctx.pipeline->buffer_records.load());
}

// Delivery to each --alertmanager: POSTs, alerts delivered, alerts given up.
void RenderAlertmanagerMetrics(const AlertSender& alerts, MetricsText& m) {
  m.Family("llmprism_alertmanager_posts_total", "counter",
           "POSTs of alerts to each --alertmanager: delivered (outcome=\"ok\") or failed (no "
           "response within the timeouts, or an HTTP status other than 2xx; logged with it).");
  for (const auto& t : alerts.targets()) {
    m.out += fmt::format("llmprism_alertmanager_posts_total{{url=\"{}\",outcome=\"ok\"}} {}\n",
                         Escape(t->url), t->posts_ok.load());
    m.out += fmt::format(
        "llmprism_alertmanager_posts_total{{url=\"{}\",outcome=\"failed\"}} {}\n",
        Escape(t->url), t->posts_failed.load());
  }
  m.Family("llmprism_alertmanager_alerts_total", "counter",
           "Alerts delivered to each --alertmanager: firing (re-sent every window while the "
           "finding lasts) or resolved (the finding no longer reported).");
  for (const auto& t : alerts.targets()) {
    m.out += fmt::format(
        "llmprism_alertmanager_alerts_total{{url=\"{}\",state=\"firing\"}} {}\n",
        Escape(t->url), t->alerts_firing.load());
    m.out += fmt::format(
        "llmprism_alertmanager_alerts_total{{url=\"{}\",state=\"resolved\"}} {}\n",
        Escape(t->url), t->alerts_resolved.load());
  }
  m.Family("llmprism_alertmanager_alerts_dropped_total", "counter",
           "Alerts given up for an --alertmanager that could not take them: more than 10000 "
           "waiting.");
  for (const auto& t : alerts.targets()) {
    m.out += fmt::format("llmprism_alertmanager_alerts_dropped_total{{url=\"{}\"}} {}\n",
                         Escape(t->url), t->alerts_dropped.load());
  }
}

// Analysis windows: how many, skipped, how long the latest took and how far behind it is.
void RenderWindowMetrics(const Snapshot& snap, const PipelineCounters& p, MetricsText& m) {
  m.Single("llmprism_windows_analysed_total", "counter",
           "Analysis windows analysed.",
           snap.windows_analysed);
  m.Single("llmprism_windows_skipped_total", "counter",
           "Due windows skipped because analysis was still busy with an earlier one.",
           p.windows_skipped.load());
  m.Single("llmprism_records_late_partial_total", "counter",
           "Records that came after an analysed window covering their start was taken, in time "
           "for the later windows, which hold them: that window was analysed without them (not "
           "a loss: raise --reorder, or --idle-flush when the data pauses).",
           p.records_late_partial.load());
  m.Single("llmprism_window_analysis_seconds", "gauge",
           "Wall time the latest window's analysis took.",
           snap.analysis_seconds);
  m.Family("llmprism_window_lag_seconds", "gauge",
           "Event time of the newest record seen minus the end of the latest analysed window.");
  // 0 once the latest window reaches past the newest record (idle flush, end of a replay).
  const double lag =
      snap.window_end_ns == 0
          ? 0
          : std::max(0.0, static_cast<double>(p.max_event_ns.load() - snap.window_end_ns) / 1e9);
  m.out += fmt::format("llmprism_window_lag_seconds {}\n", lag);
  m.Single("llmprism_window_end_seconds", "gauge",
           "End of the latest analysed window (Unix seconds).",
           static_cast<double>(snap.window_end_ns) / 1e9);
}

// Jobs by state, and each active job's step time and size.
void RenderJobMetrics(const Snapshot& snap, MetricsText& m) {
  m.Family("llmprism_jobs", "gauge", "Jobs known, by state.");
  size_t active = 0;
  for (const JobState& j : snap.jobs) active += j.active ? 1 : 0;
  m.out += fmt::format(
      "llmprism_jobs{{state=\"active\"}} {}\nllmprism_jobs{{state=\"ended\"}} {}\n", active,
      snap.jobs.size() - active);
  m.Family("llmprism_job_step_seconds", "gauge",
           "Latest step time of each active job (median over its GPUs).");
  for (const JobState& j : snap.jobs) {
    if (!j.active || j.steps.empty()) continue;
    m.out += fmt::format("llmprism_job_step_seconds{{job=\"{}\"}} {}\n", Escape(j.id),
                         j.steps.back().step_s);
  }
  m.Family("llmprism_job_step_seconds_p99", "gauge",
           "99th percentile of the GPU step times of each active job in the latest window.");
  for (const JobState& j : snap.jobs) {
    if (!j.active || j.step_time.steps == 0) continue;
    m.out += fmt::format("llmprism_job_step_seconds_p99{{job=\"{}\"}} {}\n", Escape(j.id),
                         j.step_time.p99_s);
  }
  m.Family("llmprism_job_gpus", "gauge", "GPUs of each active job.");
  for (const JobState& j : snap.jobs) {
    if (!j.active) continue;
    m.out += fmt::format("llmprism_job_gpus{{job=\"{}\"}} {}\n", Escape(j.id), j.gpus.size());
  }
}

// Findings raised by kind and severity, and the switches' data-parallel bandwidth.
void RenderFindingAndSwitchMetrics(const Snapshot& snap, MetricsText& m) {
  m.Family("llmprism_findings_total", "counter",
           "Findings raised, by kind and severity (a finding counts once when created and once "
           "more at each severity it is raised to).");
  for (const auto& [key, n] : snap.finding_raises) {
    m.out += fmt::format("llmprism_findings_total{{kind=\"{}\",severity=\"{}\"}} {}\n",
                         Escape(key.first), key.second, n);
  }
  m.Family("llmprism_switch_dp_bandwidth_relative", "gauge",
           "Relative bandwidth (1 = fabric median) of each switch or link endpoint named by a "
           "bandwidth finding in the latest window (the lowest value).");
  for (const auto& [sw, v] : snap.switch_bandwidth_relative) {
    m.out += fmt::format("llmprism_switch_dp_bandwidth_relative{{switch=\"{}\"}} {}\n",
                         Escape(sw), v);
  }
  m.Family("llmprism_switch_dp_bandwidth_ratio", "gauge",
           "Every switch that carried data-parallel traffic in the latest window: median over its "
           "DP data records of their bandwidth relative to their job's median DP record (1 = "
           "typical, 0.25 = a quarter of it).");
  for (const auto& s : snap.switch_dp_bandwidth) {
    m.out += fmt::format("llmprism_switch_dp_bandwidth_ratio{{switch=\"{}\"}} {:.4f}\n",
                         Escape(s.name), s.relative);
  }
  m.Family("llmprism_switch_dp_bandwidth_bytes_per_second", "gauge",
           "Every switch that carried data-parallel traffic in the latest window: median over its "
           "DP data records of bytes / duration (a per-transfer rate, not the switch's "
           "throughput).");
  for (const auto& s : snap.switch_dp_bandwidth) {
    m.out += fmt::format("llmprism_switch_dp_bandwidth_bytes_per_second{{switch=\"{}\"}} {:.0f}\n",
                         Escape(s.name), s.median_bytes_per_s);
  }
  m.Family("llmprism_switch_dp_records", "gauge",
           "DP data records each switch's bandwidth gauges are taken over (latest window).");
  for (const auto& s : snap.switch_dp_bandwidth) {
    m.out += fmt::format("llmprism_switch_dp_records{{switch=\"{}\"}} {}\n", Escape(s.name),
                         s.records);
  }
}

// GET /api/v1/findings?job=&kind=&severity=&since=&limit=
void ServeFindings(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  FindingFilter f;
  f.job = req.get_param_value("job");
  f.kind = req.get_param_value("kind");
  f.severity = req.get_param_value("severity");
  if (req.has_param("since")) {
    auto t = ParseApiTime(req.get_param_value("since"));
    if (!t) return SendError(res, 400, "since: expected Unix ns or seconds (up to 9.2e9)");
    f.since_ns = *t;
  }
  if (req.has_param("limit")) {
    auto n = ParseCount(req.get_param_value("limit"));
    if (!n) return SendError(res, 400, "limit: expected an integer from 1 to 1000000000");
    f.limit = *n;
  }
  SendJson(res, FindingsJson(*ctx.snapshots->Get(), f));
}

// GET /api/v1/gpus/IP/timeline?from=&to=
void ServeGpuTimeline(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto ip = IpAddr::Parse(std::string(req.matches[1]));
  if (!ip) return SendError(res, 400, "not an IP address");
  int64_t from = INT64_MIN, to = INT64_MAX;
  if (req.has_param("from")) {
    auto t = ParseApiTime(req.get_param_value("from"));
    if (!t) return SendError(res, 400, "from: expected Unix ns or seconds (up to 9.2e9)");
    from = *t;
  }
  if (req.has_param("to")) {
    auto t = ParseApiTime(req.get_param_value("to"));
    if (!t) return SendError(res, 400, "to: expected Unix ns or seconds (up to 9.2e9)");
    to = *t;
  }
  auto j = GpuTimelineJson(*ctx.snapshots->Get(), *ip, from, to);
  if (!j) return SendError(res, 404, "GPU not seen in the recent past");
  SendJson(res, *j);
}

// The dashboard's static files, cached by browsers for an hour.
void InstallAssets(httplib::Server* server) {
  auto asset = [server](const char* path, std::string_view body, const char* type) {
    server->Get(path, [body, type](const httplib::Request&, httplib::Response& res) {
      res.set_header("Cache-Control", "max-age=3600");
      res.set_content(std::string(body), type);
    });
  };
  asset("/assets/uPlot.js", output::assets::kUplotJs, "text/javascript");
  asset("/assets/uPlot.css", output::assets::kUplotCss, "text/css");
  asset("/assets/report.js", output::assets::kReportJs, "text/javascript");
  asset("/assets/report.css", output::assets::kReportCss, "text/css");
  asset("/assets/uPlot.LICENSE", output::assets::kUplotLicense, "text/plain");
  asset("/assets/live.js", kDashboardJs, "text/javascript");
}

}  // namespace

std::string RenderMetrics(const ApiContext& ctx) {
  std::shared_ptr<const Snapshot> snap = ctx.snapshots->Get();
  MetricsText m;
  RenderRecordMetrics(ctx, m);
  RenderMemoryMetrics(ctx, m);
  if (ctx.http != nullptr) RenderHttpMetrics(*ctx.http, m);
  // One copy of each source's decoder counters (taken under its lock) for every family below.
  std::vector<Stats> stats;
  for (const SourceCounters* s : ctx.sources) stats.push_back(s->GetStats());
  RenderInputQualityMetrics(ctx, stats, m);
  RenderDatagramMetrics(ctx, stats, m);
  RenderCaptureMetrics(ctx, m);
  RenderQueueMetrics(ctx, m);
  RenderStreamMetrics(*ctx.pipeline, m);
  if (ctx.alerts != nullptr) RenderAlertmanagerMetrics(*ctx.alerts, m);
  RenderWindowMetrics(*snap, *ctx.pipeline, m);
  RenderJobMetrics(*snap, m);
  RenderFindingAndSwitchMetrics(*snap, m);
  return std::move(m.out);
}

void InstallRoutes(httplib::Server* server, const ApiContext& ctx_in) {
  auto ctx = std::make_shared<ApiContext>(ctx_in);
  server->set_pre_routing_handler([ctx](const httplib::Request& req, httplib::Response& res) {
    if (ctx->token.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string& p = req.path;
    const bool open = p == "/" || p == "/api/v1/health" || p.rfind("/assets/", 0) == 0;
    if (open) return httplib::Server::HandlerResponse::Unhandled;
    if (TokenMatches(req.get_header_value("Authorization"), ctx->token)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.set_header("WWW-Authenticate", "Bearer");
    SendError(res, 401, "missing or wrong bearer token");
    return httplib::Server::HandlerResponse::Handled;
  });

  server->Get("/api/v1/health", [ctx](const httplib::Request&, httplib::Response& res) {
    SendJson(res, HealthJson(*ctx, WallNs()));
  });
  server->Get("/api/v1/jobs", [ctx](const httplib::Request&, httplib::Response& res) {
    SendJson(res, JobsJson(*ctx->snapshots->Get()));
  });
  server->Get(R"(/api/v1/jobs/([A-Za-z0-9_.-]+))",
              [ctx](const httplib::Request& req, httplib::Response& res) {
                auto j = JobJson(*ctx->snapshots->Get(), req.matches[1]);
                if (!j) return SendError(res, 404, "no such job");
                SendJson(res, *j);
              });
  server->Get("/api/v1/findings", [ctx](const httplib::Request& req, httplib::Response& res) {
    ServeFindings(*ctx, req, res);
  });
  server->Get(R"(/api/v1/gpus/([0-9A-Fa-f:.]+)/timeline)",
              [ctx](const httplib::Request& req, httplib::Response& res) {
                ServeGpuTimeline(*ctx, req, res);
              });
  server->Get("/api/v1/ingest", [ctx](const httplib::Request&, httplib::Response& res) {
    SendJson(res, IngestJson(*ctx));
  });
  server->Get("/api/v1/dashboard", [ctx](const httplib::Request&, httplib::Response& res) {
    auto s = ctx->snapshots->Get();
    std::string body = fmt::format(
        "{{\"version\":{},\"window_start_ns\":{},\"window_end_ns\":{},\"report\":{}}}",
        s->version, s->window_start_ns, s->window_end_ns,
        s->dashboard_json ? *s->dashboard_json : std::string("null"));
    res.set_content(body, "application/json");
  });
  server->Get("/api/v1/report", [ctx](const httplib::Request&, httplib::Response& res) {
    auto s = ctx->snapshots->Get();
    if (!s->report) return SendError(res, 404, "no window analysed yet");
    std::ostringstream out;
    if (auto st = output::WriteReportJson(*s->report, &out); !st) {
      return SendError(res, 500, st.error().message);
    }
    res.set_content(out.str(), "application/json");
  });
  server->Get("/metrics", [ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(RenderMetrics(*ctx), "text/plain; version=0.0.4; charset=utf-8");
  });
  server->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(kDashboardHtml), "text/html; charset=utf-8");
  });
  InstallAssets(server);
}

}  // namespace prism::service
