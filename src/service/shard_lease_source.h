// File: service/shard_lease_source.h
// `serve --role analyser --take-shards N`: the analyser takes the shards of a sharded stream by
// lease (scaleout/shard_lease.h) instead of being given a subject, and reads each shard it holds
// through that shard's durable consumer ("shard-<n>", named by the shard, not the analyser).
//
// Reading position. A shard's messages are acknowledged once every window holding their records
// is committed (scaleout/stream_checkpoint.h) and the shard's lease carries the end of the last
// committed window; the acknowledgement waits until the bucket has that end. An analyser that
// takes a shard (free, or lapsed because its holder died) reads it again from the consumer's ack
// floor (the consumer is set up anew from there: the unacknowledged batches come first, in
// order) and skips the records that only windows up to the lease's committed end hold. So the
// windows after that end see every record of the shard once, whoever read it before.
//
// A lease thread renews the leases every TTL/5 (a reader held up by a full queue must not let
// them lapse), takes shards up to the fair share, and hands taken and lost shards to the reader.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "scaleout/jetstream.h"
#include "scaleout/key_value.h"
#include "scaleout/shard_leases.h"
#include "scaleout/stream_checkpoint.h"
#include "service/ingest_counters.h"
#include "service/stream_reader.h"
#include "service/stream_source.h"

namespace prism::service {

struct ShardLeaseOptions {
  int shards = 0;                          // the recogniser's --shards
  std::chrono::milliseconds ttl{3000};     // renewed every ttl / 5
  std::string name;                        // this analyser in the bucket (hostname-pid)
  int replicas = 1;                        // copies of the lease bucket when it is created
};

class ShardLeaseSource : public StreamReader {
 public:
  // `resumed`: the database's position; only its committed end is used (where this analyser's
  // windows go on), the shards' positions are the consumers' and the leases'.
  static StatusOr<std::unique_ptr<ShardLeaseSource>> Open(
      const StreamSourceOptions& options, const ShardLeaseOptions& leases,
      const std::optional<StreamPosition>& resumed);
  // Stops renewing, acknowledges what is committed and frees the held shards.
  ~ShardLeaseSource() override;

  Status Poll(int max_messages, std::chrono::milliseconds wait, FlowSink* sink, PointTable* points,
              Stats* stats) override;
  StreamPosition PositionAfter(int64_t end_ns) override;
  void Committed(int64_t end_ns) override;

  std::string name() const override;
  bool resumed() const override { return resumed_end_ns_.has_value(); }
  int64_t committed_end_ns() const override { return resumed_end_ns_.value_or(0); }
  uint64_t next_sequence() const override { return 0; }
  uint64_t last_sequence() const override { return 0; }
  uint64_t lag_messages() const override { return pending_.load(); }
  uint64_t records_already_analysed() const override { return already_analysed_.load(); }
  uint64_t reconnects() const override { return 0; }
  uint64_t redelivered() const override { return redelivered_.load(); }
  std::optional<int64_t> origin_ns() const override {
    const int64_t o = origin_ns_.load();
    return o == INT64_MAX ? std::nullopt : std::optional<int64_t>(o);
  }
  bool caught_up() const override {
    return reachable_.load() && pending_.load() == 0 && !setting_up_.load() &&
           orphaned_.load() == 0;
  }

  int64_t analysed_elsewhere_end_ns() const override { return analysed_elsewhere_end_ns_.load(); }
  uint64_t shards_held() const { return shards_held_.load(); }
  uint64_t leases_taken() const { return leases_taken_.load(); }
  uint64_t takeovers() const { return takeovers_.load(); }  // taken from a holder that lapsed
  uint64_t leases_lost() const { return leases_lost_.load(); }
  std::optional<HeldShards> held_shards() const override;
  // The leases were renewed within 80% of the TTL: no other analyser can have taken a held shard
  // (it waits a whole TTL). Windows are handed to analysis only then (the fence: an analyser
  // stalled past its leases' TTL learns which it lost before it analyses again).
  bool may_hand_off() const override;
  // The held shards' consumers' positions. Reader thread only (the thread that polls).
  std::vector<PipelineCounters::ShardPosition> ShardPositions() const;

 private:
  struct Reading {
    int shard = 0;
    std::unique_ptr<scaleout::PullConsumer> consumer;
    std::unique_ptr<scaleout::StreamCheckpoint> checkpoint;
    int64_t first_needed_start_ns = INT64_MIN;  // records before it: committed by an earlier holder
    int64_t answers_after_ns = INT64_MIN;  // the lease's committed end when taken (HeldShards)
    uint64_t next_sequence = 1;
    int64_t latest_start_ns = INT64_MIN;  // of the records read: how far this shard has come
    std::map<uint64_t, scaleout::DeliveredMessage> unacknowledged;
    uint64_t pending = 0;
  };
  ShardLeaseSource(const StreamSourceOptions& options, const ShardLeaseOptions& leases,
                   std::optional<int64_t> resumed_end_ns);
  void RunLeases();
  // Reader thread: sets up the shards taken, drops the lost ones; an error when a shard could
  // not be set up (tried again at the next poll).
  Status ApplyLeaseEvents();
  void LogTaken(const scaleout::ShardLeaseEvent& e, uint64_t from_sequence);
  Status SetUp(int shard, int64_t committed_end_ns);
  void Read(Reading& r, std::vector<scaleout::DeliveredMessage>& messages, FlowSink* sink,
            PointTable* points, Stats* stats);
  void Acknowledge(Reading& r, int64_t confirmed_end_ns);
  void LookUpPending();
  // The shard's reading has begun (a record read, or nothing pending), so the windows handed to
  // analysis from now on hold its records.
  void NoteBegun(const Reading& r);

  StreamSourceOptions options_;
  ShardLeaseOptions leases_;
  std::optional<int64_t> resumed_end_ns_;
  std::unique_ptr<scaleout::JetStream> js_;        // the reader thread's connection
  std::unique_ptr<scaleout::JetStream> lease_js_;  // the lease thread's
  std::unique_ptr<scaleout::ShardLeases> holder_;
  std::map<int, Reading> readings_;                // reader thread only
  std::unique_ptr<scaleout::KeyValueBucket> shard_bucket_;  // for the origin
  std::chrono::steady_clock::time_point last_pending_lookup_{};

  std::mutex mu_;  // the lease thread's hand-over to the reader
  std::vector<scaleout::ShardLeaseEvent> events_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  bool renew_now_ = false;  // a window was committed: write its end into the leases at once
  std::thread lease_thread_;

  std::atomic<int64_t> committed_end_ns_{0};  // the analysis thread's last commit
  std::atomic<int64_t> confirmed_end_ns_{0};  // ... written into every held lease
  std::atomic<uint64_t> pending_{0}, already_analysed_{0}, redelivered_{0}, shards_held_{0},
      leases_taken_{0}, takeovers_{0}, leases_lost_{0};
  std::atomic<bool> reachable_{false}, setting_up_{false};
  std::atomic<int64_t> renewed_at_ns_{0};  // steady clock of the last renewal that went through
  std::atomic<int> orphaned_{1};  // shards nobody reads (scaleout/shard_leases.h orphaned())
  std::atomic<int64_t> origin_ns_{INT64_MAX};
  std::atomic<int64_t> analysed_elsewhere_end_ns_{INT64_MIN};  // the latest taken shard's commit

  // held_shards(): filled by the reader and lease threads, copied by the window thread when a
  // window is handed to analysis.
  mutable std::mutex sources_mu_;
  std::map<int, HeldShards::Held> begun_;  // shards held whose reading has begun
  std::set<int> lost_;                      // read here before, lost since (not taken again)
  std::unordered_map<IpAddr, int, IpAddrHash> shard_of_source_;
  uint64_t sources_version_ = 0;  // changes of shard_of_source_
  mutable uint64_t copied_version_ = UINT64_MAX;
  mutable std::shared_ptr<const std::unordered_map<IpAddr, int, IpAddrHash>> copied_;
};

}  // namespace prism::service
