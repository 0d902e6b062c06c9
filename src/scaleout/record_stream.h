// File: scaleout/record_stream.h
// Flow records into and out of a JetStream stream, as record batches (scaleout/record_batch.h):
// what a collector publishes and what an analyser reads. `llmprism publish` and `llmprism analyze
// nats://...` are these two ends run once over a file (docs/scale-out.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"
#include "scaleout/jetstream.h"
#include "scaleout/record_batch.h"

namespace prism::scaleout {

inline constexpr char kRecordStream[] = "LLMPRISM_RECORDS";
inline constexpr char kRecordSubjects[] = "records.>";

// A FlowSink that publishes its records on `subject` in batches of `batch_records`. Batch n gets
// the message id "<id_prefix>-<n>-<hash of its bytes>": publishing the same input again stores
// nothing twice (within the stream's deduplication window), while other records published under
// the same prefix are not taken for repeats. A batch the stream did not acknowledge is kept,
// compressed, with its id, and published again (first) by the next Flush: records are never
// dropped here; the caller decides how long to wait (`held_batches`).
class BatchPublisher : public FlowSink {
 public:
  BatchPublisher(JetStream* js, std::string subject, std::string id_prefix,
                 const PointTable* points, size_t batch_records);
  void OnRecord(const FlowRecord& record) override;
  // Publishes the batches held and what is gathered; the first error (what was not published
  // stays held). `points` may be replaced between calls (a copy of a growing table).
  Status Flush();
  Status Finish() { return Flush(); }
  void set_points(const PointTable* points) { points_ = points; }
  uint64_t records() const { return records_; }            // given to OnRecord
  uint64_t published_records() const { return published_records_; }
  uint64_t batches() const { return batches_; }            // published (acknowledged)
  uint64_t duplicates() const { return duplicates_; }
  uint64_t errors() const { return errors_; }              // failed publish attempts
  size_t held_batches() const { return held_.size(); }
  uint64_t held_records() const;

 private:
  struct Held {
    std::string bytes, id;
    uint64_t records = 0;
  };
  void Seal();              // the gathered records become a held batch
  Status PublishHeld();
  JetStream* js_;
  std::string subject_, id_prefix_;
  const PointTable* points_;
  size_t batch_records_;
  RecordBatchWriter writer_;
  std::deque<Held> held_;
  uint64_t sealed_ = 0;  // batches numbered so far
  uint64_t records_ = 0, published_records_ = 0, batches_ = 0, duplicates_ = 0, errors_ = 0;
};

// A stream to read: nats://HOST:PORT[/STREAM[/SUBJECT]] (defaults kRecordStream, kRecordSubjects).
struct StreamAddress {
  std::string server;  // nats://HOST:PORT
  std::string stream = kRecordStream;
  std::string subject = kRecordSubjects;
};
StatusOr<StreamAddress> ParseStreamAddress(const std::string& url);

// Every batch the stream holds on the address's subject into `sink`, through a consumer of its
// own (removed afterwards): until a fetch waits `idle` for nothing. Each batch is acknowledged
// once its records are delivered; one that does not decode is counted (record_batches_bad, with
// a warning naming its sequence and what was wrong) and skipped. Returns the records delivered.
StatusOr<uint64_t> ReadRecordStream(const StreamAddress& address, std::chrono::milliseconds idle,
                                    FlowSink* sink, PointTable* points, Stats* stats);

}  // namespace prism::scaleout
