// File: service/held_shards.h
// The shards an analyser holding shards by lease (--take-shards) holds when a window is handed to
// analysis, and which shard each source address's records came from. Taken then, so that a shard
// taken or lost afterwards does not change what the window holds. Two uses:
// - the fence: records of a shard this analyser no longer holds (its lease lapsed while it was
//   stalled, and another analyser took the shard and reads its records again from the lease's
//   committed end) are left out of the window (LeftToAnotherHolder), so that the two analysers do
//   not both analyse them;
// - the fabric stage (--fabric-stage): the window's contribution is published as the parts of
//   the shards it answers for (AnsweredIn; diagnosis/rules/fabric_contribution_split.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/ip_addr.h"

namespace prism::service {

struct HeldShards {
  struct Held {
    int shard = 0;
    // The lease's committed end when this analyser took the shard: windows up to it were the
    // previous holder's, published by it (or never, if it died between); this analyser answers
    // for the windows after.
    int64_t answers_after_ns = INT64_MIN;
  };
  std::vector<Held> held;  // by shard, ascending; only shards whose reading has begun
  std::vector<int> lost;   // shards read here before and not held now, ascending
  // A record's shard by its source address: the shard whose subject it was read from (the latest,
  // for an address whose job moved between two shards this analyser read).
  std::shared_ptr<const std::unordered_map<IpAddr, int, IpAddrHash>> shard_of_source;

  // The shards answered for in the window ending at end_ns, ascending.
  std::vector<int> AnsweredIn(int64_t end_ns) const {
    std::vector<int> out;
    for (const Held& h : held) {
      if (end_ns > h.answers_after_ns) out.push_back(h.shard);
    }
    return out;
  }
  // A record from `src` was read from a shard lost since: its new holder analyses it.
  bool LeftToAnotherHolder(const IpAddr& src) const {
    if (lost.empty() || !shard_of_source) return false;
    auto it = shard_of_source->find(src);
    return it != shard_of_source->end() &&
           std::binary_search(lost.begin(), lost.end(), it->second);
  }
};

}  // namespace prism::service
