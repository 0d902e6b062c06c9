// File: scaleout/shard_table.h
// The GPU -> job -> shard map as a process holds it (scaleout/shard_map.h): filled from the
// key-value bucket's updates, asked for the shard of each record. Collectors and the recogniser
// route by the same rule, so a record lands on the same shard whichever of them routes it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/flow_record.h"
#include "core/ip_addr.h"
#include "scaleout/key_value.h"
#include "scaleout/shard_map.h"

namespace prism::scaleout {

class ShardTable {
 public:
  void Set(const IpAddr& gpu, const ShardEntry& entry) { entries_[gpu] = entry; }
  // False when the update is no shard entry (another key, a bad value): the caller counts it.
  bool Apply(const KeyValueUpdate& update);
  const ShardEntry* Find(const IpAddr& gpu) const;
  // The shard of the record's source GPU, else of its destination's; none when neither is
  // mapped. A record between two jobs' GPUs (which job recognition does not let happen inside a
  // job) goes with its source.
  std::optional<int> ShardOf(const FlowRecord& record) const;
  // The subject the record goes to: its shard's (ShardSubject), else `unmapped` (a collector:
  // kUnroutedSubject, to the recogniser; the recogniser, after recognising: NoJobSubject()).
  std::string SubjectOf(const FlowRecord& record, const std::string& unmapped) const;
  size_t size() const { return entries_.size(); }
  const std::unordered_map<IpAddr, ShardEntry, IpAddrHash>& entries() const { return entries_; }

 private:
  std::unordered_map<IpAddr, ShardEntry, IpAddrHash> entries_;
};

}  // namespace prism::scaleout
