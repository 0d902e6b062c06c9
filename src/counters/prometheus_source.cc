#include "counters/prometheus_source.h"

#include <cmath>
#include <ctime>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

namespace prism::counters {

StatusOr<int64_t> ParseTimeMs(const std::string& text) {
  char* end = nullptr;
  double secs = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0') return static_cast<int64_t>(std::llround(secs * 1000));
  std::tm tm{};
  const char* p = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (p == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "time '{}': expected Unix seconds or RFC 3339 like 2024-05-24T00:00:00Z", text);
  }
  double frac = 0;
  if (*p == '.') {
    char* q = nullptr;
    frac = std::strtod(p, &q);
    p = q;
  }
  if (*p != 'Z' && *p != '\0') {
    return MakeError(ErrorCode::kInvalidArgument, "time '{}': only UTC (Z) is supported", text);
  }
  return static_cast<int64_t>(timegm(&tm)) * 1000 + static_cast<int64_t>(std::llround(frac * 1000));
}

StatusOr<CountersData> ReadPrometheus(const PrometheusOptions& o, Stats* stats) {
  if (o.url.empty() || o.end_ms <= o.start_ms) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "prometheus: a URL and a time range with end after start are needed");
  }
  httplib::Client client(o.url);
  client.set_connection_timeout(5);
  client.set_read_timeout(120);
  // Per port: time -> (in, out); NaN where a direction has no sample at that time.
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  std::map<std::pair<std::string, std::string>, std::map<int64_t, std::array<double, 2>>> series;
  const int64_t chunk_ms = std::max<int64_t>(1000, static_cast<int64_t>(o.chunk_s * 1000));
  std::string selector = fmt::format("{{__name__=~\"{}|{}\"{}{}}}", o.in_metric, o.out_metric,
                                     o.matchers.empty() ? "" : ",", o.matchers);
  uint64_t samples = 0;
  for (int64_t a = o.start_ms; a <= o.end_ms; a += chunk_ms) {
    const int64_t b = std::min(o.end_ms, a + chunk_ms - 1);  // this chunk: [a, b]
    // A range selector at time b over (b - a) ms: [a, b] in Prometheus 2 (closed), (a, b] in 3;
    // samples already seen are dropped below, so either way nothing is lost or doubled... except
    // a sample exactly at `a` under Prometheus 3, hence the extra millisecond.
    const std::string query = fmt::format("{}[{}ms]", selector, b - a + 1);
    httplib::Params params{{"query", query}, {"time", fmt::format("{}.{:03}", b / 1000, b % 1000)}};
    auto res = client.Get("/api/v1/query", params, httplib::Headers{});
    if (!res) {
      return MakeError(ErrorCode::kNotFound, "prometheus {}: {}", o.url,
                       httplib::to_string(res.error()));
    }
    nlohmann::json doc = nlohmann::json::parse(res->body, nullptr, false);
    if (doc.is_discarded() || doc.value("status", "") != "success") {
      return MakeError(ErrorCode::kDataLoss, "prometheus {}: query {} failed (HTTP {}): {}", o.url,
                       query, res->status, res->body.substr(0, 300));
    }
    for (const auto& s : doc["data"]["result"]) {
      const auto& m = s["metric"];
      const std::string name = m.value("__name__", "");
      const int dir = name == o.in_metric ? 0 : 1;
      if (!m.contains(o.switch_label) || !m.contains(o.port_label)) {
        if (stats) stats->Add(Stat::counters_bad_row, s["values"].size());
        continue;
      }
      auto& per_time = series[{m[o.switch_label].get<std::string>(), m[o.port_label].get<std::string>()}];
      for (const auto& v : s["values"]) {
        const int64_t ts = static_cast<int64_t>(std::llround(v[0].get<double>() * 1000));
        const double value = std::strtod(v[1].get<std::string>().c_str(), nullptr);
        if (!std::isfinite(value) || value < 0) {
          if (stats) stats->Add(Stat::counters_bad_row);
          continue;
        }
        auto [it, inserted] = per_time.try_emplace(ts, std::array<double, 2>{kNan, kNan});
        if (std::isnan(it->second[dir])) {
          it->second[dir] = value;
          ++samples;
        }
      }
    }
  }
  if (samples == 0) {
    return MakeError(ErrorCode::kDataLoss, "prometheus {}: no sample of {} or {} in the range",
                     o.url, o.in_metric, o.out_metric);
  }
  CountersBuilder builder(o.kind, stats);
  for (const auto& [key, per_time] : series) {
    double last[2] = {0, 0};
    for (const auto& [ts, v] : per_time) {
      // A direction missing at this time keeps its last value (a cumulative counter), or 0 bytes
      // (deltas).
      for (int d = 0; d < 2; ++d) {
        if (!std::isnan(v[d])) last[d] = v[d];
        else if (o.kind != CounterKind::kCumulative) last[d] = 0;
      }
      builder.Add(key.first, key.second, ts, static_cast<uint64_t>(std::llround(last[0])),
                  static_cast<uint64_t>(std::llround(last[1])));
    }
  }
  return builder.Finish();
}

}  // namespace prism::counters
