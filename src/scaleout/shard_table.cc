#include "scaleout/shard_table.h"

namespace prism::scaleout {

bool ShardTable::Apply(const KeyValueUpdate& update) {
  const std::optional<IpAddr> gpu = GpuFromKey(update.key);
  if (!gpu) return false;
  if (update.deleted) {
    entries_.erase(*gpu);
    return true;
  }
  const std::optional<ShardEntry> entry = DecodeShardEntry(update.value);
  if (!entry) return false;
  entries_[*gpu] = *entry;
  return true;
}

const ShardEntry* ShardTable::Find(const IpAddr& gpu) const {
  auto it = entries_.find(gpu);
  return it == entries_.end() ? nullptr : &it->second;
}

std::optional<int> ShardTable::ShardOf(const FlowRecord& record) const {
  if (const ShardEntry* e = Find(record.src)) return e->shard;
  if (const ShardEntry* e = Find(record.dst)) return e->shard;
  return std::nullopt;
}

std::string ShardTable::SubjectOf(const FlowRecord& record, const std::string& unmapped) const {
  const std::optional<int> shard = ShardOf(record);
  return shard ? ShardSubject(*shard) : unmapped;
}

}  // namespace prism::scaleout
