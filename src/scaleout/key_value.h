// File: scaleout/key_value.h
// A JetStream key-value bucket (libnats' kvStore): where the recogniser publishes the GPU -> job
// -> shard map and collectors follow it (scaleout/shard_map.h, docs/scale-out.md). Only what
// those two need: open (creating it if absent), put, read everything, and watch for changes;
// and the compare-and-set writes of shard leases (scaleout/shard_lease.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "scaleout/jetstream.h"

struct __kvStore;
struct __kvWatcher;

namespace prism::scaleout {

// A key's value with its revision (the bucket stream's sequence of that value): what a
// compare-and-set update names.
struct KeyValueEntry {
  std::string value;
  uint64_t revision = 0;
};

struct KeyValueUpdate {
  std::string key;
  std::string value;  // empty for a deleted key
  bool deleted = false;
};

// Follows a bucket: every key's current value first, then each change as it comes.
class KeyValueWatcher {
 public:
  explicit KeyValueWatcher(__kvWatcher* w) : w_(w) {}
  ~KeyValueWatcher();
  KeyValueWatcher(const KeyValueWatcher&) = delete;
  KeyValueWatcher& operator=(const KeyValueWatcher&) = delete;
  // The next update, waiting at most `timeout`; none (nullopt) when nothing came. The marker the
  // server sends once the initial values are delivered is skipped.
  StatusOr<std::optional<KeyValueUpdate>> Next(std::chrono::milliseconds timeout);

 private:
  friend class KeyValueBucket;  // ReadAll stops at the initial-state marker
  __kvWatcher* w_;
};

class KeyValueBucket {
 public:
  // Binds `bucket`, creating it (file storage, `replicas` copies, one value per key kept) if it
  // does not exist. `js` must outlive the bucket.
  static StatusOr<std::unique_ptr<KeyValueBucket>> Open(JetStream* js, const std::string& bucket,
                                                        int replicas);
  // Binds `bucket` only; an error when it does not exist.
  static StatusOr<std::unique_ptr<KeyValueBucket>> Bind(JetStream* js, const std::string& bucket);
  ~KeyValueBucket();
  KeyValueBucket(const KeyValueBucket&) = delete;
  KeyValueBucket& operator=(const KeyValueBucket&) = delete;

  Status Put(const std::string& key, const std::string& value);
  // The key's value; none when the bucket has no such key.
  StatusOr<std::optional<std::string>> Get(const std::string& key);
  // Every key and its value, as the bucket holds them now.
  StatusOr<std::map<std::string, std::string>> ReadAll();
  StatusOr<std::map<std::string, KeyValueEntry>> ReadAllEntries();
  // Compare-and-set: Create fails when the key holds a value; Update fails unless the key's
  // revision is still `last_revision`. Either returns the new revision; an error when another
  // writer came first (or the bucket is out of reach: either way the caller does not hold it).
  StatusOr<uint64_t> Create(const std::string& key, const std::string& value);
  StatusOr<uint64_t> Update(const std::string& key, const std::string& value,
                            uint64_t last_revision);
  Status Delete(const std::string& key);
  StatusOr<std::unique_ptr<KeyValueWatcher>> Watch();

 private:
  explicit KeyValueBucket(__kvStore* kv, std::string name) : kv_(kv), name_(std::move(name)) {}
  __kvStore* kv_;
  std::string name_;
};

}  // namespace prism::scaleout
