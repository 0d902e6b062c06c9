// File: counters/port_counters.h
// Counters mode, input stage: switch port byte counters as polled by gNMI / SNMP / sFlow counter
// samples, one series per (switch, port), and the port -> server/NIC map that says whose traffic a
// port carries. Readers: a counters CSV (the shared Zhejiang dataset's columns, deltas or cumulative
// counters) here, the Prometheus HTTP API in counters/prometheus_source.h. Everything downstream
// (counters/resample.h, counters/counters_analysis.h) works on PortSeries holding *deltas*: bytes
// counted since the port's previous poll. Sits beside io (uses its FileReader), before analysis.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/stats.h"
#include "core/status.h"

namespace prism::counters {

// One port's polls, in time order, timestamps strictly increasing. in_bytes[i] / out_bytes[i] are
// the bytes counted between poll i-1 and poll i (switch's view: "in" = from the server, "out" = to
// the server). A first poll's delta covers an unknown interval; readers keep it, the resampler
// drops it. A cumulative source converts to deltas on reading (wrap and reset handled there).
struct PortSeries {
  std::string switch_name;
  std::string port;
  std::vector<int64_t> ts_ms;
  std::vector<uint64_t> in_bytes;
  std::vector<uint64_t> out_bytes;
};

struct CountersData {
  std::vector<PortSeries> ports;  // sorted by (switch, port)
  uint64_t rows = 0;              // polls accepted
  int64_t first_ms = 0, last_ms = 0;
};

enum class CounterKind { kAuto, kDelta, kCumulative };
const char* CounterKindName(CounterKind kind);
// "auto" | "delta" | "cumulative"; kInvalidArgument otherwise.
StatusOr<CounterKind> ParseCounterKind(std::string_view name);

// Builds CountersData from polls that arrive in any order (per port or interleaved). Each poll
// carries raw values: deltas or cumulative counters as `kind` says (kAuto decides per port in
// Finish(): cumulative when the values never decrease except for a few resets and are large
// compared to their steps). Equal timestamps of one port keep the first poll
// (counters_out_of_order).
class CountersBuilder {
 public:
  explicit CountersBuilder(CounterKind kind, Stats* stats) : kind_(kind), stats_(stats) {}
  void Add(std::string_view switch_name, std::string_view port, int64_t ts_ms, uint64_t in_raw,
           uint64_t out_raw);
  CountersData Finish();

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  CounterKind kind_;
  Stats* stats_;
  std::vector<PortSeries> ports_;
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> index_;  // "switch\tport"
  std::string key_;
  uint64_t rows_ = 0;
};

// Cumulative values -> deltas: a decrease is a wrap at 2^32 (previous value within the top quarter
// of the 32-bit range and the wrapped delta plausible) or 2^64 (likewise), else a reset
// (counters_reset: the new value is taken as the bytes since the reset, as Prometheus' increase()
// does). The first delta is the first value (its interval is unknown anyway).
void CumulativeToDelta(std::vector<uint64_t>* values, Stats* stats);

// Counters CSV: header names ts_ms (or ts / timestamp_ms), switch, port, in_bytes, out_bytes in any
// order; other columns (in_pkts, out_pkts) ignored. zstd files are read transparently. Bad rows
// bump counters_bad_row and are skipped (the first 5 described on stderr).
// Errors: kNotFound, kDataLoss (no header with those columns, or no usable row).
StatusOr<CountersData> ReadCountersCsv(const std::string& path, CounterKind kind, Stats* stats);
StatusOr<CountersData> ReadCountersCsvBuffer(std::string_view data, const std::string& name,
                                             CounterKind kind, Stats* stats);
// Writes the shared dataset's layout (ts_ms,switch,port,in_pkts,in_bytes,out_pkts,out_bytes;
// packets written as 0) with deltas, ports in order, polls in time order.
Status WriteCountersCsv(const CountersData& data, std::ostream* out);

// One NIC as the port topology names it.
struct PortNic {
  std::string server;
  std::string nic_ip;  // may be empty
  std::string nic;     // interface name, e.g. ens11np0; may be empty
};

// Port topology CSV: header switch,port,server[,nic_ip][,nic]. Bad rows bump topology_bad_row;
// a port listed twice keeps its first row (topology_duplicate_ip).
// Errors: kNotFound, kDataLoss (header lacks switch/port/server, or no usable row).
using PortTopology = std::map<std::pair<std::string, std::string>, PortNic>;
StatusOr<PortTopology> ReadPortTopologyCsv(const std::string& path, Stats* stats);
StatusOr<PortTopology> ReadPortTopologyCsvBuffer(std::string_view data, const std::string& name,
                                                 Stats* stats);
Status WritePortTopologyCsv(const PortTopology& topo, std::ostream* out);

}  // namespace prism::counters
