#include "scaleout/shard_leases.h"

#include <algorithm>

namespace prism::scaleout {

ShardLeases::ShardLeases(JetStream* js, std::string name, int shards,
                         std::chrono::milliseconds ttl, int replicas)
    : js_(js), name_(std::move(name)), shards_(shards), replicas_(replicas), clock_(ttl) {}

StatusOr<std::vector<ShardLeaseEvent>> ShardLeases::Tick(int64_t committed_end_ns,
                                                         Clock::time_point now, bool take) {
  if (!bucket_) {
    // File storage (KeyValueBucket::Open): the committed ends outlive a server restart.
    PRISM_ASSIGN_OR_RETURN(bucket_, KeyValueBucket::Open(js_, kLeaseBucket, replicas_));
  }
  PRISM_ASSIGN_OR_RETURN(auto entries, bucket_->ReadAllEntries());
  for (const auto& [key, e] : entries) clock_.Observe(key, e.revision, now);
  std::vector<ShardLeaseEvent> events;
  PRISM_RETURN_IF_ERROR(bucket_->Put(MemberKey(name_), "alive"));
  PRISM_RETURN_IF_ERROR(Renew(entries, committed_end_ns, &events));
  live_ = CountLive(entries, now);
  if (take) Take(entries, committed_end_ns, now, &events);
  orphaned_ = CountOrphaned(entries, now);
  return events;
}

Status ShardLeases::Renew(const std::map<std::string, KeyValueEntry>& entries,
                          int64_t committed_end_ns, std::vector<ShardLeaseEvent>* events) {
  for (auto it = held_.begin(); it != held_.end();) {
    const int shard = it->first;
    const std::string value =
        EncodeShardLease({name_, std::max(committed_end_ns, it->second.taken_end_ns)});
    auto revision = bucket_->Update(ShardLeaseKey(shard), value, it->second.revision);
    if (revision) {
      it->second.revision = *revision;
      ++it;
      continue;
    }
    // Refused: the key moved past our last write. Out of reach instead: try again next tick.
    auto current = entries.find(ShardLeaseKey(shard));
    const bool moved = current == entries.end() || current->second.revision != it->second.revision;
    if (!moved) return std::unexpected(revision.error());
    ShardLeaseEvent e;
    e.kind = ShardLeaseEvent::Kind::kLost;
    e.shard = shard;
    if (current != entries.end()) {
      if (auto lease = DecodeShardLease(current->second.value)) e.other = lease->holder;
    }
    events->push_back(e);
    held_set_.erase(shard);
    it = held_.erase(it);
  }
  return OkStatus();
}

int ShardLeases::CountLive(const std::map<std::string, KeyValueEntry>& entries,
                           Clock::time_point now) {
  int live = 1;  // this analyser
  for (const auto& [key, e] : entries) {
    auto member = MemberFromKey(key);
    if (member && *member != name_ && !clock_.Lapsed(key, now)) ++live;
  }
  return live;
}

int ShardLeases::CountOrphaned(const std::map<std::string, KeyValueEntry>& entries,
                               Clock::time_point now) {
  int orphaned = 0;
  for (int n = 0; n < shards_; ++n) {
    if (held_set_.contains(n)) continue;
    const std::string key = ShardLeaseKey(n);
    auto it = entries.find(key);
    auto lease = it == entries.end() ? std::nullopt : DecodeShardLease(it->second.value);
    // One renewal missed (renewals come every TTL/5): 1.5 periods, 0.3 TTL.
    if (!lease || lease->free() || clock_.Unchanged(key, now) > clock_.ttl() * 3 / 10) {
      ++orphaned;
    }
  }
  return orphaned;
}

void ShardLeases::Take(const std::map<std::string, KeyValueEntry>& entries,
                       int64_t committed_end_ns, Clock::time_point now,
                       std::vector<ShardLeaseEvent>* events) {
  std::vector<ShardState> states(shards_);
  for (int n = 0; n < shards_; ++n) {
    auto it = entries.find(ShardLeaseKey(n));
    if (it == entries.end()) continue;
    states[n].present = true;
    auto lease = DecodeShardLease(it->second.value);
    // A value that does not decode is treated as free: taken over (it holds no committed end).
    if (lease) states[n].lease = *lease;
    states[n].lapsed = clock_.Lapsed(it->first, now);
  }
  for (int shard : ShardsToTake(states, held_set_, live_)) {
    const std::string key = ShardLeaseKey(shard);
    const ShardState& s = states[shard];
    ShardLeaseEvent e;
    e.shard = shard;
    e.other = s.lease.holder;
    e.committed_end_ns = s.lease.committed_end_ns;
    e.unchanged = s.present && !s.lease.free() ? clock_.Unchanged(key, now)
                                               : std::chrono::milliseconds(0);
    // The shard's windows up to its committed end are done; ours go on from ours.
    const std::string value =
        EncodeShardLease({name_, std::max(committed_end_ns, s.lease.committed_end_ns)});
    auto revision = s.present ? bucket_->Update(key, value, entries.at(key).revision)
                              : bucket_->Create(key, value);
    if (!revision) continue;  // another analyser came first
    held_[shard] = Held{*revision, s.lease.committed_end_ns};
    held_set_.insert(shard);
    events->push_back(e);
  }
}

Status ShardLeases::Release(int64_t committed_end_ns) {
  if (!bucket_) return OkStatus();
  Status first;
  for (const auto& [shard, h] : held_) {
    auto r = bucket_->Update(ShardLeaseKey(shard),
                             EncodeShardLease({"", std::max(committed_end_ns, h.taken_end_ns)}),
                             h.revision);
    if (!r && first) first = std::unexpected(r.error());
  }
  held_.clear();
  held_set_.clear();
  if (Status st = bucket_->Delete(MemberKey(name_)); !st && first) first = st;
  return first;
}

}  // namespace prism::scaleout
