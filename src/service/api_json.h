// File: service/api_json.h
// The JSON documents of the `llmprism serve` HTTP API (docs/api.md), built from a Snapshot, and
// the finding document the SQLite store keeps (the same one the API serves, so a finding read
// back after a restart is served byte for byte as before).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "service/snapshot.h"

namespace prism::service {

nlohmann::json FindingToJson(const StoredFinding& f);
std::optional<StoredFinding> FindingFromJson(const nlohmann::json& j);

nlohmann::json LayoutToJson(const output::ReportLayout& l);
output::ReportLayout LayoutFromJson(const nlohmann::json& j);

// /api/v1/jobs: every job, without step series.
nlohmann::json JobsJson(const Snapshot& s);
// /api/v1/jobs/{id}: layout, hosts, GPUs and the step-time series; nullopt when unknown.
std::optional<nlohmann::json> JobJson(const Snapshot& s, const std::string& id);

struct FindingFilter {
  std::string job, kind, severity;  // empty = any
  int64_t since_ns = INT64_MIN;     // findings that end at or after this
  size_t limit = 1000;              // the most recent ones
};
nlohmann::json FindingsJson(const Snapshot& s, const FindingFilter& filter);

// /api/v1/gpus/{ip}/timeline: steps overlapping [from_ns, to_ns]; nullopt when the GPU is unknown.
std::optional<nlohmann::json> GpuTimelineJson(const Snapshot& s, const IpAddr& gpu, int64_t from_ns,
                                              int64_t to_ns);

}  // namespace prism::service
