// File: service/ingest_counters.h
// Live ingest counters of `llmprism serve`, per source and for the window stage. Written by the
// ingest and window threads (atomics, or Stats under a small mutex), read by /metrics and
// /api/v1/ingest at any time.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/stats.h"

namespace prism::service {

struct SourceCounters {
  std::string name;  // "udp:127.0.0.1:4739", "dir:/var/spool/flows"
  std::string kind;  // "ipfix-udp" | "watch" | "capture"
  std::string capture_filter;  // capture: the BPF filter ("" = none)
  uint16_t udp_port = 0;
  std::atomic<uint64_t> records{0};             // decoded and offered to the queue
  std::atomic<uint64_t> datagrams{0};           // UDP datagrams received
  std::atomic<uint64_t> files{0};               // files read (watch)
  std::atomic<uint64_t> packets{0};             // packets captured (capture)
  std::atomic<uint64_t> kernel_drops{0};        // packets dropped by the kernel (capture, pcap_stats)
  std::atomic<uint64_t> dropped_queue_full{0};  // records dropped: record queue full
  std::atomic<uint64_t> dropped_late{0};        // records dropped: older than every open window
  std::atomic<uint64_t> dropped_buffer_full{0}; // records dropped: window buffer at its bound
  std::atomic<uint64_t> accepted{0};            // records placed in windows
  std::atomic<int64_t> last_record_wall_ns{0};

  // Decoder / reader data-quality counters (core/stats.h).
  void MergeStats(const Stats& s) {
    std::lock_guard<std::mutex> lock(mu);
    stats.Merge(s);
  }
  Stats GetStats() const {
    std::lock_guard<std::mutex> lock(mu);
    return stats;
  }

 private:
  mutable std::mutex mu;
  Stats stats;
};

struct PipelineCounters {
  std::atomic<uint64_t> windows_skipped{0};  // due windows replaced before analysis took them
  std::atomic<uint64_t> store_errors{0};
  std::atomic<int64_t> max_event_ns{0};      // latest record end seen
  std::atomic<uint64_t> buffer_records{0};
  std::atomic<int64_t> next_window_end_ns{0};
  std::atomic<int64_t> started_wall_ns{0};
  std::atomic<uint64_t> store_bad_rows{0};
};

}  // namespace prism::service
