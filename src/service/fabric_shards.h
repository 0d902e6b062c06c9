// File: service/fabric_shards.h
// Which shards an analyser holding shards by lease (--take-shards --fabric-stage) answers for in
// a window, and which shard each source address's records came from: what it needs to publish
// one window's fabric contribution as the parts of its shards
// (diagnosis/rules/fabric_contribution_split.h). Taken when the window is handed to analysis,
// so that a shard taken or lost afterwards does not change what the window holds.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/ip_addr.h"

namespace prism::service {

struct FabricShards {
  struct Held {
    int shard = 0;
    // The lease's committed end when this analyser took the shard: windows up to it were the
    // previous holder's, published by it (or never, if it died between); this analyser answers
    // for the windows after.
    int64_t answers_after_ns = INT64_MIN;
  };
  std::vector<Held> held;  // by shard, ascending; only shards whose reading has begun
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
};

}  // namespace prism::service
