// File: scaleout/shard_map.h
// The GPU -> job -> shard map (docs/scale-out.md, Sharding by job): the recogniser writes it into
// the key-value bucket kShardBucket, one key per GPU; collectors follow it and publish each record
// on its shard's subject. What the keys, values and subjects look like, in one place.
#pragma once

#include <optional>
#include <string>

#include "core/ip_addr.h"

namespace prism::scaleout {

inline constexpr char kShardBucket[] = "llmprism_shards";
// Records whose endpoints the map does not know yet: read by the recogniser, which forwards them
// once it has recognised their jobs.
inline constexpr char kUnroutedSubject[] = "records.unrouted";

// Where the analysers' first window starts (its value: the start of the earliest step bucket,
// Unix ns, in decimal), written once by the recogniser. One serve places its first window by the
// earliest record of all jobs; a shard that sees only later-starting jobs would otherwise start
// its windows later and miss the first one (service/window_buffer.h SetOrigin).
inline constexpr char kWindowOriginKey[] = "window.origin";

struct ShardEntry {
  int shard = 0;
  std::string job;  // the job's key: its id (service/stable_ids.h) from its GPUs when assigned
  friend bool operator==(const ShardEntry&, const ShardEntry&) = default;
};

// "records.shard.<n>.jobs": the records of shard n's jobs. Shard n's analyser reads
// ShardSubjects(n) = "records.shard.<n>.>".
std::string ShardSubject(int shard);
std::string ShardSubjects(int shard);
// "records.shard.0.other": records the recogniser found in no job (storage, hubs, non-GPU
// endpoints): analysed with shard 0, so that nothing read goes unanalysed.
std::string NoJobSubject();

// Key-value keys allow [-/_=.a-zA-Z0-9]: "gpu.<address>" with an IPv6 address's ':' as '_'.
std::string GpuKey(const IpAddr& gpu);
std::optional<IpAddr> GpuFromKey(const std::string& key);
// Values: "<shard> <job>".
std::string EncodeShardEntry(const ShardEntry& e);
std::optional<ShardEntry> DecodeShardEntry(const std::string& value);

}  // namespace prism::scaleout
