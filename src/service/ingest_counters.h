// File: service/ingest_counters.h
// Live ingest counters of `llmprism serve`, per source and for the window stage. Written by the
// ingest and window threads (atomics, or Stats under a small mutex), read by /metrics and
// /api/v1/ingest at any time.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/stats.h"

namespace prism::service {

struct SourceCounters {
  std::string name;  // "udp:127.0.0.1:4739", "dir:/var/spool/flows"
  std::string kind;  // "ipfix-udp" | "sflow-udp" | "watch" | "capture"
  bool is_udp() const { return kind == "ipfix-udp" || kind == "sflow-udp"; }
  std::string capture_filter;  // capture: the BPF filter ("" = none)
  uint16_t udp_port = 0;
  std::atomic<uint64_t> records{0};             // decoded and offered to the queue
  std::atomic<uint64_t> datagrams{0};           // UDP datagrams received
  std::atomic<uint64_t> datagrams_refused{0};   // from sources outside --exporter-allow
  std::atomic<uint64_t> files{0};               // files read (watch)
  std::atomic<uint64_t> packets{0};             // packets captured (capture)
  std::atomic<uint64_t> kernel_drops{0};        // packets dropped by the kernel (capture, pcap_stats)
  std::atomic<uint64_t> dropped_queue_full{0};  // records dropped: record queue full
  std::atomic<uint64_t> dropped_late{0};        // records dropped: older than every open window
  std::atomic<uint64_t> dropped_buffer_full{0}; // records dropped: the memory budget was full
  std::atomic<uint64_t> dropped_implausible{0}; // records dropped: implausible time (clock_guard.h)
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
  std::atomic<uint64_t> windows_skipped{0};  // due windows passed over while analysis was busy
  std::atomic<uint64_t> store_errors{0};
  std::atomic<int64_t> max_event_ns{0};      // latest record end seen
  std::atomic<uint64_t> buffer_records{0};
  std::atomic<int64_t> next_window_end_ns{0};
  std::atomic<int64_t> started_wall_ns{0};
  std::atomic<uint64_t> store_bad_rows{0};

  // Memory (service/memory_plan.h, window_buffer.h).
  std::atomic<int64_t> memory_limit_bytes{0};
  std::atomic<int64_t> buffer_limit_bytes{0};
  std::atomic<uint64_t> window_record_limit{0};
  std::atomic<int64_t> buffer_bytes{0};            // every record segment alive
  std::atomic<uint64_t> windows_shortened{0};      // windows cut short by the budget
  std::atomic<uint64_t> records_given_up{0};       // buffered, but no window could hold them
  std::atomic<uint64_t> records_skipped{0};        // only in windows skipped (analysis behind)
  std::atomic<uint64_t> records_late_partial{0};   // in later windows only: an analysed one missed them
  std::atomic<uint64_t> records_held{0};           // held by the clock guard now

  // Analysis.
  std::atomic<uint64_t> windows_failed{0};         // not analysed (out of memory)
  std::atomic<int64_t> analysing_start_ns{0}, analysing_end_ns{0};  // window in analysis; 0 none

  // Wall times of the last of each kind of trouble (0 = never), for /api/v1/health.
  std::atomic<int64_t> last_loss_wall_ns{0};
  std::atomic<int64_t> last_shortened_wall_ns{0};
  std::atomic<int64_t> last_failed_wall_ns{0};

  // Scale-out roles (service/service.h ServiceRole): a collector's publishing, an analyser's
  // reading. `stream_role` is set once at start ("" in the one-process serve).
  std::string stream_role;
  std::atomic<uint64_t> published_records{0}, published_batches{0}, publish_errors{0};
  std::atomic<uint64_t> publish_held_records{0};  // gathered or refused, waiting to be published
  std::atomic<uint64_t> publish_lost_records{0};  // still unpublished when the collector stopped
  // A collector routing by job: records of endpoints its shard map did not know (sent to the
  // recogniser), and the GPUs its map holds.
  std::atomic<uint64_t> unrouted_records{0}, shard_map_gpus{0};
  std::atomic<uint64_t> stream_next_sequence{0}, stream_last_sequence{0};
  std::atomic<uint64_t> stream_already_analysed{0};  // read again after a restart, not a loss
  std::atomic<uint64_t> stream_reconnects{0};
  std::atomic<uint64_t> stream_redelivered{0};  // messages the stream delivered again
  // Messages in the stream an analyser has not read (as of its last look at the stream); by
  // lease, those of the shards it holds, as their consumers count them.
  uint64_t stream_lag_messages() const {
    if (stream_leases) return stream_lease_lag.load();
    const uint64_t next = stream_next_sequence.load(), last = stream_last_sequence.load();
    return last + 1 > next ? last + 1 - next : 0;
  }
  std::atomic<uint64_t> stream_lease_lag{0};
  // An analyser taking shards by lease (--take-shards): shards held, leases taken (free or
  // lapsed), taken over from a holder whose lease lapsed, and lost (taken by another).
  bool stream_leases = false;
  std::atomic<uint64_t> shards_held{0}, shard_leases_taken{0}, shard_takeovers{0},
      shard_leases_lost{0};
  // By lease, each held shard is read through its own consumer, with its own sequence: one
  // next/last sequence would say nothing, so /api/v1/ingest lists the shards' positions.
  struct ShardPosition {
    int shard = 0;
    uint64_t next_sequence = 0;  // the next message of the shard's consumer to read
    uint64_t lag_messages = 0;   // its messages not yet delivered, as its consumer counts them
  };
  std::vector<ShardPosition> ShardPositions() const {
    std::lock_guard<std::mutex> lock(shard_positions_mu_);
    return shard_positions_;
  }
  void SetShardPositions(std::vector<ShardPosition> positions) {
    std::lock_guard<std::mutex> lock(shard_positions_mu_);
    shard_positions_ = std::move(positions);
  }

  // The fabric stage (docs/scale-out.md): an analyser's contributions published (--fabric-stage),
  // and the fabric role's contributions read and windows judged.
  std::atomic<uint64_t> fabric_published{0}, fabric_published_pieces{0},
      fabric_published_bytes{0}, fabric_publish_errors{0}, fabric_publish_given_up{0};
  // Of fabric_published: empty contributions (windows with no record of the shard); and windows
  // of a gap too long to list, published for by no contribution (WindowBuffer).
  std::atomic<uint64_t> fabric_published_empty{0}, fabric_empty_windows_unlisted{0};
  // Shards held by lease: records of a window left out of every part published because their
  // shard's previous holder committed (and published) that window.
  std::atomic<uint64_t> fabric_records_not_answered{0};
  // Shards taken by lease: records of a shard lost since they were read, left out of this
  // analyser's windows (its new holder analyses them; service/held_shards.h).
  std::atomic<uint64_t> records_left_to_other_holder{0};
  std::atomic<uint64_t> fabric_received_empty{0};  // of fabric_received
  std::atomic<uint64_t> fabric_received{0}, fabric_received_bytes{0}, fabric_bad{0},
      fabric_duplicates{0}, fabric_already_judged{0}, fabric_windows_judged{0},
      fabric_windows_incomplete{0}, fabric_pending_windows{0};
  std::atomic<double> fabric_judge_cpu_seconds{0};
  bool fabric_publishing = false;  // an analyser with --fabric-stage
  int fabric_shards = 0;  // the fabric role's --shards

  // Store: whether the last write succeeded, and what is waiting to be written again.
  std::atomic<bool> store_ok{true};
  std::atomic<uint64_t> unsaved_findings{0}, unsaved_jobs{0}, unsaved_steps{0};
  std::atomic<int64_t> store_failing_since_wall_ns{0};
  void SetStoreError(const std::string& e) {
    std::lock_guard<std::mutex> lock(mu);
    store_error = e;
  }
  std::string GetStoreError() const {
    std::lock_guard<std::mutex> lock(mu);
    return store_error;
  }

 private:
  mutable std::mutex mu;
  std::string store_error;  // the last write's error; empty when it succeeded
  mutable std::mutex shard_positions_mu_;
  std::vector<ShardPosition> shard_positions_;
};

}  // namespace prism::service
