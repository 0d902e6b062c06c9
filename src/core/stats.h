// File: core/stats.h
// Data-quality counters. Bad data is not an error: a reader bumps a counter and skips the record.
// The CLI, the report's "input" object and /metrics show every non-zero counter, so nothing is
// dropped silently. Defined once as an X-macro: name, severity, description.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace prism {

enum class StatSeverity { kInfo, kDataLoss, kError };

// clang-format off
#define PRISM_STATS(F)                                                                          \
  F(records_read,            kInfo,     "flow records accepted from all inputs")                \
  F(csv_bad_row,             kDataLoss, "CSV rows skipped: wrong column count or unparsable field") \
  F(csv_bad_time,            kDataLoss, "CSV rows skipped: end_ns before start_ns")             \
  F(topology_bad_row,        kDataLoss, "topology rows skipped: unparsable")                    \
  F(topology_duplicate_ip,   kDataLoss, "topology rows skipped: IP listed twice")               \
  F(ipfix_bad_message,       kDataLoss, "IPFIX messages skipped: bad header or length")         \
  F(ipfix_bad_set,           kDataLoss, "IPFIX sets skipped: bad length")                       \
  F(ipfix_unknown_template,  kDataLoss, "IPFIX data sets skipped: no template seen for the id") \
  F(ipfix_bad_record,        kDataLoss, "IPFIX records skipped: missing fields or bad times")   \
  F(ipfix_bad_template,      kDataLoss, "IPFIX templates skipped: malformed")                   \
  F(ipfix_options_record,    kInfo,     "IPFIX option-template records skipped (metadata, not flows)") \
  F(records_outside_window,  kInfo,     "records outside every analysis window")                \
  F(records_non_gpu,         kInfo,     "records to or from endpoints marked non-GPU")          \
  F(records_hub,             kInfo,     "records of hub endpoints excluded from job recognition") \
  F(counters_rows,           kInfo,     "port counter polls accepted (counters mode)")          \
  F(counters_bad_row,        kDataLoss, "port counter rows skipped: wrong column count or unparsable field") \
  F(counters_out_of_order,   kDataLoss, "port counter rows skipped: timestamp not after the port's previous poll") \
  F(counters_wrap,           kInfo,     "cumulative counters that wrapped at 2^32 or 2^64 (delta recovered)") \
  F(counters_reset,          kInfo,     "cumulative counters that went backwards (reset; the new value taken as the delta)") \
  F(counters_stale_zero,     kInfo,     "zero deltas followed by a non-zero one within the refresh period (switch refreshed slower than polled)") \
  F(counters_gap,            kInfo,     "poll gaps longer than the gap limit (bytes spread, bins marked missing)") \
  F(counters_unmapped_port,  kInfo,     "ports without a server in the port topology (not analysed)")
// clang-format on

enum class Stat : int {
#define PRISM_STAT_ENUM(name, sev, desc) name,
  PRISM_STATS(PRISM_STAT_ENUM)
#undef PRISM_STAT_ENUM
      kCount
};

struct StatInfo {
  const char* name;
  StatSeverity severity;
  const char* description;
};

inline constexpr std::array<StatInfo, static_cast<size_t>(Stat::kCount)> kStatInfo = {{
#define PRISM_STAT_INFO(name, sev, desc) {#name, StatSeverity::sev, desc},
    PRISM_STATS(PRISM_STAT_INFO)
#undef PRISM_STAT_INFO
}};

class Stats {
 public:
  void Add(Stat s, uint64_t n = 1) { values_[static_cast<size_t>(s)] += n; }
  uint64_t Get(Stat s) const { return values_[static_cast<size_t>(s)]; }
  void Merge(const Stats& other) {
    for (size_t i = 0; i < values_.size(); ++i) values_[i] += other.values_[i];
  }
  // Total of counters with severity kDataLoss or kError: records we could not use.
  uint64_t SkippedTotal() const {
    uint64_t n = 0;
    for (size_t i = 0; i < values_.size(); ++i)
      if (kStatInfo[i].severity != StatSeverity::kInfo) n += values_[i];
    return n;
  }
  const std::array<uint64_t, static_cast<size_t>(Stat::kCount)>& values() const { return values_; }

 private:
  std::array<uint64_t, static_cast<size_t>(Stat::kCount)> values_{};
};

}  // namespace prism
