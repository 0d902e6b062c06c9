// File: service/window_loss.h
// What `llmprism serve` lost on the way to one analysis window: records dropped before analysis
// (socket and collector-queue datagrams, a full record queue, late or implausible times, the
// memory budget, skipped windows) between the previous window's hand-over and this one's, so the
// loss is told with the window that misses the data: in its report (`windows[].records_lost`),
// as a finding of kind telemetry_loss with the share lost, and in /api/v1/health.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace prism::service {

// The finding kind of lost telemetry (a finding's kind is a string; one name for it here).

// Reasons, as /metrics and /api/v1/ingest name them.
inline constexpr const char* kLossSocket = "socket";            // kernel socket buffer (datagrams)
inline constexpr const char* kLossCollectorQueue = "collector_queue";  // datagram queue full
inline constexpr const char* kLossQueueFull = "queue_full";     // record queue full
inline constexpr const char* kLossLate = "late";                // older than every open window
inline constexpr const char* kLossImplausible = "implausible_time";
inline constexpr const char* kLossBufferFull = "buffer_full";   // memory budget
inline constexpr const char* kLossSkipped = "skipped";          // only in windows skipped
inline constexpr const char* kLossUnpublished = "unpublished";  // a collector stopped holding them

struct WindowLoss {
  uint64_t accepted = 0;                 // records placed in windows over the same interval
  std::map<std::string, uint64_t> lost;  // by reason; datagrams converted to records (estimate)
  uint64_t Total() const {
    uint64_t n = 0;
    for (const auto& [reason, v] : lost) n += v;
    return n;
  }
  double Share() const {
    const uint64_t t = Total();
    return t == 0 ? 0 : static_cast<double>(t) / static_cast<double>(t + accepted);
  }
};

}  // namespace prism::service
