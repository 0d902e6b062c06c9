// File: service/stream_reader.h
// What `serve --role analyser` reads its records through: the subjects it is given
// (--nats-subject, service/stream_source.h) or the shards it takes by lease (--take-shards,
// service/shard_lease_source.h). The reader thread polls it; the analysis thread asks for the
// position to commit with each window and says when the window is committed.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"
#include "service/held_shards.h"
#include "service/store.h"

namespace prism::service {

class StreamReader {
 public:
  virtual ~StreamReader() = default;
  // One fetch, waiting at most `wait`: records to `sink` (point names interned in `points`), bad
  // batches counted (record_batches_bad) and skipped. An error (the server gone) is retried by
  // the caller.
  virtual Status Poll(int max_messages, std::chrono::milliseconds wait, FlowSink* sink,
                      PointTable* points, Stats* stats) = 0;
  // Analysis thread: the position to commit with the window ending at `end_ns`...
  virtual StreamPosition PositionAfter(int64_t end_ns) = 0;
  // ... and that window is committed in the database.
  virtual void Committed(int64_t /*end_ns*/) {}

  virtual std::string name() const = 0;
  // The database held a position: windows go on after committed_end_ns().
  virtual bool resumed() const = 0;
  virtual int64_t committed_end_ns() const = 0;
  virtual uint64_t next_sequence() const = 0;
  virtual uint64_t last_sequence() const = 0;
  // Record batches not read yet: of the stream, the subjects or the held shards.
  virtual uint64_t lag_messages() const {
    const uint64_t next = next_sequence(), last = last_sequence();
    return last + 1 > next ? last + 1 - next : 0;
  }
  virtual uint64_t records_already_analysed() const = 0;
  virtual uint64_t reconnects() const = 0;
  virtual uint64_t redelivered() const = 0;
  virtual std::optional<int64_t> origin_ns() const = 0;
  // Nothing left to read: a pause in the records is a pause in the data (serve's idle flush).
  virtual bool caught_up() const = 0;
  // Windows up to this end were analysed by another process with the records read here again
  // (a shard taken over: its previous holder's committed windows); INT64_MIN: none. Set before
  // those records are read.
  virtual int64_t analysed_elsewhere_end_ns() const { return INT64_MIN; }
  // Shards taken by lease: the shards held and where each source address's records came from
  // (service/held_shards.h); nullopt for a reader of given subjects. Any thread.
  virtual std::optional<HeldShards> held_shards() const { return std::nullopt; }
  // Windows may be handed to analysis now (shards taken by lease: only while the leases are
  // known to be current). Any thread.
  virtual bool may_hand_off() const { return true; }
};

}  // namespace prism::service
