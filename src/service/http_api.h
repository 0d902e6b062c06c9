// File: service/http_api.h
// The HTTP side of `llmprism serve` (cpp-httplib): the JSON API (docs/api.md), Prometheus
// /metrics (text exposition format 0.0.4) and the live dashboard at /. Handlers only read the
// published Snapshot and the live counters. With a token, every path except /api/v1/health and
// the dashboard's static files needs "Authorization: Bearer TOKEN".
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "service/alert_sender.h"
#include "service/http_server.h"
#include "service/ingest_counters.h"
#include "service/snapshot.h"

namespace httplib {
class Server;
}

namespace prism::service {

struct ApiContext {
  const SnapshotHolder* snapshots = nullptr;
  std::vector<SourceCounters*> sources;
  const PipelineCounters* pipeline = nullptr;
  size_t queue_capacity = 0;
  std::function<size_t()> queue_size;
  std::string token;
  int64_t window_ns = 0, step_ns = 0;
  bool has_store = false;  // --db given
  const HttpCounters* http = nullptr;  // the server's connection counts (/metrics)
  HttpLimits http_limits;
  const AlertSender* alerts = nullptr;  // --alertmanager delivery counters (/metrics)
};

// The bearer token check: "Bearer " + token, compared in time independent of where the first
// difference is (a timing side channel must not reveal the token byte by byte).
bool TokenMatches(std::string_view authorization_header, std::string_view token);

// Query times: integer Unix ns, or seconds (integer below 1e11, or with a fraction or exponent)
// within what int64 ns can hold; nullopt for anything else (1e300, NaN, "12abc").
std::optional<int64_t> ParseApiTime(const std::string& s);

// /api/v1/health is "degraded" while any of its reasons is this recent (or, for the store, while
// writes fail): lost records, windows cut short or not analysed.
inline constexpr int64_t kDegradedHoldNs = 300'000'000'000;

// /api/v1/health: "ok" or "degraded" with the reasons, the loss by reason, memory, store state.
nlohmann::json HealthJson(const ApiContext& ctx, int64_t now_wall_ns);
// /api/v1/ingest: per source what was received and dropped, the stream (roles), queue and buffer.
nlohmann::json IngestJson(const ApiContext& ctx);

void InstallRoutes(httplib::Server* server, const ApiContext& ctx);

// /metrics text (exposed for tests).
std::string RenderMetrics(const ApiContext& ctx);

}  // namespace prism::service
