// File: service/stream_source.h
// `serve --role analyser`: the records come from a JetStream stream of record batches
// (scaleout/record_stream.h) that `serve --role collector` or `llmprism publish` wrote, instead of
// sockets, directories or interfaces. The source reads from the position committed with the last
// window (scaleout/stream_checkpoint.h, service/store.h StreamPosition), skips the records only
// committed windows hold, and gives the analysis thread the position to commit with each window:
// a restarted analyser (crash, upgrade) analyses every window once and whole.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"
#include "scaleout/jetstream.h"
#include "scaleout/key_value.h"
#include "scaleout/stream_checkpoint.h"
#include "service/store.h"
#include "service/stream_reader.h"

namespace prism::service {

struct StreamSourceOptions {
  std::string url;      // nats://HOST:PORT, or several comma-separated (a cluster)
  std::string stream;   // e.g. LLMPRISM_RECORDS
  std::string subject;  // e.g. records.>
  int64_t window_ns = 0, step_ns = 0;  // the window grid (service/window_buffer.h)
};

// A reader of one shard: where the service's data starts (scaleout/shard_map.h kWindowOriginKey)
// as the recogniser wrote it into its bucket (bound into `*bucket` on first use); none before it is
// written. A value that is no Unix ns is logged once and given as INT64_MAX - 1 (windows then
// placed by the reader's own records).
std::optional<int64_t> ReadWindowOrigin(scaleout::JetStream* js,
                                        std::unique_ptr<scaleout::KeyValueBucket>* bucket);

class StreamSource : public StreamReader {
 public:
  // `resumed`: the position the database holds (none for a new analyser: the stream's start).
  // A position of another stream or subject is refused: it would skip or repeat records.
  static StatusOr<std::unique_ptr<StreamSource>> Open(const StreamSourceOptions& options,
                                                      const std::optional<StreamPosition>& resumed);

  // One fetch of up to `max_messages`, waiting at most `wait`: records to `sink` (point names
  // interned in `points`), bad batches counted (record_batches_bad) and skipped. An error (the
  // server gone) leaves the position where it was; the next Poll connects again and goes on
  // from the first message not read.
  Status Poll(int max_messages, std::chrono::milliseconds wait, FlowSink* sink, PointTable* points,
              Stats* stats) override;
  // Analysis thread: the position to commit with the window ending at `end_ns`.
  StreamPosition PositionAfter(int64_t end_ns) override;

  std::string name() const override;                // "stream:LLMPRISM_RECORDS/records.>"
  bool resumed() const override { return committed_end_ns_.has_value(); }
  int64_t committed_end_ns() const override { return committed_end_ns_.value_or(0); }
  uint64_t next_sequence() const override { return next_sequence_.load(); }
  // The stream's (or of its subjects, for a shard's reader), as last looked up.
  uint64_t last_sequence() const override { return last_sequence_.load(); }
  // Records read again after a restart that only committed windows hold (not a loss).
  uint64_t records_already_analysed() const override { return already_analysed_.load(); }
  uint64_t reconnects() const override { return reconnects_.load(); }
  // Messages the stream delivered again: ones this reader had read already (its consumer's
  // position restored behind its own after a server restart; skipped) or whose delivery count
  // is above 1. Not a loss: how often the stream's hand-off repeated itself.
  uint64_t redelivered() const override { return redelivered_.load(); }
  // A reader of one shard: where the service's data starts (scaleout/shard_map.h
  // kWindowOriginKey), once the recogniser has written it; none before, or for a reader of every
  // subject (whose own records place its windows as one serve's).
  std::optional<int64_t> origin_ns() const override {
    const int64_t o = origin_ns_.load();
    return o == INT64_MAX ? std::nullopt : std::optional<int64_t>(o);
  }
  // The last fetch worked and nothing the stream held (at the last look) is left to read: only
  // then is a pause in the records a pause in the data (serve's idle flush), not an outage or a
  // backlog.
  bool caught_up() const override {
    return reachable_.load() && next_sequence_.load() > last_sequence_.load();
  }

 private:
  StreamSource(const StreamSourceOptions& options, uint64_t first_sequence,
               std::optional<int64_t> committed_end_ns);
  Status Connect();
  // The stream's last sequence as this reader sees it; `delivered_up_to`: the last fetch's last.
  void LookUpLastSequence(uint64_t delivered_up_to);
  void LookUpOrigin();

  StreamSourceOptions options_;
  scaleout::StreamCheckpoint checkpoint_;
  std::optional<int64_t> committed_end_ns_;
  int64_t first_needed_start_ns_ = INT64_MIN;  // records before it: already analysed
  std::unique_ptr<scaleout::JetStream> js_;
  std::unique_ptr<scaleout::PullConsumer> consumer_;
  std::chrono::steady_clock::time_point last_lookup_{};
  std::chrono::steady_clock::time_point stalled_since_{};  // messages to read, none coming
  std::atomic<uint64_t> next_sequence_{1}, last_sequence_{0}, already_analysed_{0},
      reconnects_{0}, redelivered_{0};
  std::atomic<bool> reachable_{false};
  std::unique_ptr<scaleout::KeyValueBucket> shard_bucket_;  // for the origin
  std::atomic<int64_t> origin_ns_{INT64_MAX};
};

}  // namespace prism::service
