// File: scaleout/shard_router.h
// A collector that shards by job (`serve --role collector --route-by-job`, docs/scale-out.md):
// every record goes into the pair summary the recogniser builds the pair graph from, and onto
// the subject of its shard by the GPU -> job -> shard map it follows (scaleout/shard_table.h);
// a record neither of whose endpoints the map knows goes to the recogniser (kUnroutedSubject),
// which forwards it once it has recognised its job. Nothing is dropped here: what the stream does
// not take is held and published again by the next Flush (scaleout/record_stream.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/status.h"
#include "scaleout/jetstream.h"
#include "scaleout/key_value.h"
#include "scaleout/pair_summary.h"
#include "scaleout/record_stream.h"
#include "scaleout/shard_table.h"

namespace prism::scaleout {

struct ShardRouterOptions {
  std::string id_prefix;     // message ids "<id_prefix>.<subject>-<n>-<hash>"
  std::string pair_subject;  // where its pair summaries go, e.g. pairs.<collector>
  size_t batch_records = 4096;
  int64_t step_ns = 10'000'000'000;    // pair summaries per step bucket of start time
  int64_t window_ns = 60'000'000'000;  // buckets kept for deduplication: two windows
  int replicas = 1;                    // of the pair stream and the bucket, if created here
};

class ShardRouter : public FlowSink {
 public:
  // Creates the pair stream and the shard bucket if absent and starts following the map.
  static StatusOr<std::unique_ptr<ShardRouter>> Open(JetStream* js,
                                                     const ShardRouterOptions& options,
                                                     const PointTable* points);
  void OnRecord(const FlowRecord& record) override;
  // The map's updates so far applied: the records given next are routed by them.
  Status FollowMap();
  // Publishes the pair summary first, then every subject's batches; the first error (what was
  // not published stays held).
  Status Flush();
  void set_points(const PointTable* points);

  uint64_t records() const { return records_; }
  uint64_t unrouted_records() const { return unrouted_; }  // sent to the recogniser
  uint64_t published_records() const;
  uint64_t batches() const;
  uint64_t errors() const;
  uint64_t held_records() const;
  size_t map_gpus() const { return table_.size(); }
  uint64_t bad_map_entries() const { return bad_map_entries_; }
  // Records given per subject (shard subjects and kUnroutedSubject).
  std::map<std::string, uint64_t> routed() const;

 private:
  ShardRouter(JetStream* js, const ShardRouterOptions& options, const PointTable* points);
  BatchPublisher& PublisherFor(const std::string& subject);
  Status PublishPairs();

  JetStream* js_;
  ShardRouterOptions options_;
  const PointTable* points_;
  std::unique_ptr<KeyValueBucket> bucket_;
  std::unique_ptr<KeyValueWatcher> watcher_;
  ShardTable table_;
  PairSummaryBuilder pairs_;
  std::vector<PairSighting> pairs_held_;  // summaries the stream has not taken yet
  uint64_t pair_messages_ = 0;
  std::map<std::string, std::unique_ptr<BatchPublisher>> publishers_;  // by subject
  uint64_t records_ = 0, unrouted_ = 0, bad_map_entries_ = 0, pair_errors_ = 0;
};

}  // namespace prism::scaleout
