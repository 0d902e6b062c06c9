// File: counters/prometheus_source.h
// Counters mode input from a Prometheus server's HTTP API: the per-port byte counters that a gNMI
// or SNMP exporter scrapes (cumulative counters, e.g. SNMP exporter's ifHCInOctets/ifHCOutOctets
// with the switch in `instance` and the port in `ifName`; names configurable). The raw samples are
// read with range-vector queries (`/api/v1/query` of `{__name__=~"in|out"}[chunk]`, one chunk of
// time at a time), so the analysis sees exactly the polls the exporter made, as from a CSV file;
// query_range would instead resample them onto its own step.
#pragma once

#include <cstdint>
#include <string>

#include "core/stats.h"
#include "core/status.h"
#include "counters/port_counters.h"

namespace prism::counters {

struct PrometheusOptions {
  std::string url;  // http://host:port (no path)
  std::string in_metric = "ifHCInOctets";
  std::string out_metric = "ifHCOutOctets";
  std::string switch_label = "instance";
  std::string port_label = "ifName";
  std::string matchers;          // extra label matchers, e.g. job="snmp" (no braces)
  int64_t start_ms = 0, end_ms = 0;  // required: [start, end]
  double chunk_s = 600;          // time per query
  CounterKind kind = CounterKind::kCumulative;
};

// Errors: kInvalidArgument (bad options), kNotFound (server unreachable), kDataLoss (an error
// answer, unparsable JSON, or no sample at all).
StatusOr<CountersData> ReadPrometheus(const PrometheusOptions& options, Stats* stats);

// Parses "2024-05-24T00:00:00Z"-style RFC 3339 (UTC, optional fraction) or Unix seconds
// (fraction allowed) into Unix ms.
StatusOr<int64_t> ParseTimeMs(const std::string& text);

}  // namespace prism::counters
