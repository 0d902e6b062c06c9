// File: scaleout/shard_leases.h
// One analyser's side of the shard leases (scaleout/shard_lease.h): its member key and the shard
// keys it holds in the bucket kLeaseBucket, renewed each Tick(), and the shards it takes (free
// ones, and those whose holder stopped renewing for the TTL) up to its fair share. Not
// thread-safe: one thread ticks it (service/shard_lease_source.h runs it beside the reading, so
// that a reader held up by a full queue does not let its leases lapse).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "scaleout/jetstream.h"
#include "scaleout/key_value.h"
#include "scaleout/shard_lease.h"

namespace prism::scaleout {

struct ShardLeaseEvent {
  enum class Kind { kTaken, kLost };
  Kind kind = Kind::kTaken;
  int shard = 0;
  std::string other;              // taken: the holder it was taken from (empty: free or new);
                                  // lost: who holds it now (empty: unknown)
  int64_t committed_end_ns = 0;   // taken: the shard's committed end at the takeover
  std::chrono::milliseconds unchanged{0};  // taken from a holder: how long its lease had lapsed
};

class ShardLeases {
 public:
  using Clock = std::chrono::steady_clock;
  // `js` must outlive this. `name`: this analyser (LeaseName), unique among the live ones.
  // `replicas`: copies of the bucket if this creates it (3 on a 3-node cluster).
  ShardLeases(JetStream* js, std::string name, int shards, std::chrono::milliseconds ttl,
              int replicas);

  // Reads the bucket, renews this analyser's member key and held shards (with `committed_end_ns`,
  // the end of the last window this analyser committed), notes lost ones, then takes shards up to
  // the fair share when `take` (the caller waits a little after starting, so that analysers
  // started together see each other's member keys before they take). An error (the bucket out of
  // reach) leaves the held shards held: they lapse for the others only after the TTL, and the
  // next successful renewal either keeps them or finds them taken (kLost).
  StatusOr<std::vector<ShardLeaseEvent>> Tick(int64_t committed_end_ns, Clock::time_point now,
                                              bool take);
  // Frees the held shards (with `committed_end_ns`) and deletes the member key: the next analyser
  // takes them at once rather than after the TTL.
  Status Release(int64_t committed_end_ns);

  const std::set<int>& held() const { return held_set_; }
  int live_analysers() const { return live_; }
  // Shards nobody reads now, as of the last tick: never held, free, or whose holder missed a
  // renewal (unchanged for 0.3 TTL: it may be gone). Their records are not quiet, only unread: an
  // analyser does not take a pause in its own records for the end of the data meanwhile.
  int orphaned() const { return orphaned_; }
  const std::string& name() const { return name_; }

 private:
  Status Renew(const std::map<std::string, KeyValueEntry>& entries, int64_t committed_end_ns,
               std::vector<ShardLeaseEvent>* events);
  void Take(const std::map<std::string, KeyValueEntry>& entries, int64_t committed_end_ns,
            Clock::time_point now, std::vector<ShardLeaseEvent>* events);
  int CountLive(const std::map<std::string, KeyValueEntry>& entries, Clock::time_point now);
  int CountOrphaned(const std::map<std::string, KeyValueEntry>& entries, Clock::time_point now);

  JetStream* js_;
  std::string name_;
  int shards_, replicas_;
  LeaseClock clock_;
  std::unique_ptr<KeyValueBucket> bucket_;
  struct Held {
    uint64_t revision = 0;           // of our last write
    int64_t taken_end_ns = 0;        // the shard's committed end when taken: never written lower
  };
  std::map<int, Held> held_;
  std::set<int> held_set_;
  int live_ = 1;
  int orphaned_ = 0;
};

}  // namespace prism::scaleout
