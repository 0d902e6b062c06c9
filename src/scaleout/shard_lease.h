// File: scaleout/shard_lease.h
// Shard leases (docs/scale-out.md, Shards taken by lease): analysers started with
// `serve --role analyser --take-shards N` take the shards of a sharded stream by themselves. Each
// shard has one key in the key-value bucket kLeaseBucket, held by one analyser at a time: taken
// with the bucket's compare-and-set (create, or update at the revision last seen), renewed by its
// holder, and taken over by another analyser once its revision has not changed for the lease's
// TTL. Each analyser also renews a member key, so that every analyser knows how many are alive and
// takes at most its fair share. This file: what the keys and values look like and the decisions,
// without the bucket (scaleout/shard_leases.h does the bucket's side).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace prism::scaleout {

// Its own bucket, not the shard map's: collectors follow every change of kShardBucket, and every
// analyser renewing its keys each second would wake every collector for nothing.
inline constexpr char kLeaseBucket[] = "llmprism_leases";

// "shard.<n>" and "analyser.<name>" (key-value keys allow [-/_=.a-zA-Z0-9]).
std::string ShardLeaseKey(int shard);
std::optional<int> ShardFromLeaseKey(const std::string& key);
std::string MemberKey(const std::string& analyser);
std::optional<std::string> MemberFromKey(const std::string& key);
// An analyser's name as a key allows: other characters become '_'.
std::string LeaseName(const std::string& raw);

// A shard key's value: "<holder> <committed end>", the holder "-" when the shard is free (its last
// holder released it). The committed end (Unix ns; 0 when none) is the end of the last window
// whose records of this shard are committed: whoever takes the shard skips the records only
// windows up to it hold (scaleout/stream_checkpoint.h), so none is counted twice.
struct ShardLease {
  std::string holder;  // empty: free
  int64_t committed_end_ns = 0;
  bool free() const { return holder.empty(); }
};
std::string EncodeShardLease(const ShardLease& lease);
std::optional<ShardLease> DecodeShardLease(const std::string& value);

// Whether a key's holder is gone, judged on the observer's own clock (no clocks compared across
// machines): a key whose revision has not changed for the TTL has lapsed. A key first seen is
// given a whole TTL from then.
class LeaseClock {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LeaseClock(std::chrono::milliseconds ttl) : ttl_(ttl) {}
  void Observe(const std::string& key, uint64_t revision, Clock::time_point now);
  void Forget(const std::string& key) { seen_.erase(key); }
  bool Lapsed(const std::string& key, Clock::time_point now) const;
  // How long the key's revision has stayed the same (0 for a key not seen).
  std::chrono::milliseconds Unchanged(const std::string& key, Clock::time_point now) const;
  std::chrono::milliseconds ttl() const { return ttl_; }

 private:
  struct Seen {
    uint64_t revision = 0;
    Clock::time_point since;
  };
  std::chrono::milliseconds ttl_;
  std::map<std::string, Seen> seen_;
};

// shards / live analysers, rounded up (at least 1 analyser: this one).
int FairShare(int shards, int live_analysers);

// What a shard key holds, as last read: absent (never held), or its lease and whether it lapsed.
struct ShardState {
  bool present = false;
  ShardLease lease;
  bool lapsed = false;
};

// The shards this analyser should try to take now, best first: never held or free ones, then
// lapsed ones (lowest shard first within each), so that held < fair share after taking them.
std::vector<int> ShardsToTake(const std::vector<ShardState>& shards, const std::set<int>& held,
                              int live_analysers);

}  // namespace prism::scaleout
