#include "scaleout/key_value.h"

#include <nats/nats.h>

#include <algorithm>

#include <fmt/format.h>

namespace prism::scaleout {

namespace {

std::unexpected<Error> KvError(const std::string& what, natsStatus s) {
  return MakeError(ErrorCode::kInternal, "NATS key-value: {}: {}", what, natsStatus_GetText(s));
}

}  // namespace

KeyValueWatcher::~KeyValueWatcher() { kvWatcher_Destroy(w_); }

StatusOr<std::optional<KeyValueUpdate>> KeyValueWatcher::Next(std::chrono::milliseconds timeout) {
  // The initial-state marker is a null entry: read on, within the same wait.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    kvEntry* e = nullptr;
    const natsStatus s = kvWatcher_Next(&e, w_, std::max<int64_t>(1, left.count()));
    if (s == NATS_TIMEOUT) return std::optional<KeyValueUpdate>();
    if (s != NATS_OK) return KvError("watching", s);
    if (e == nullptr) {
      if (left.count() <= 0) return std::optional<KeyValueUpdate>();
      continue;
    }
    KeyValueUpdate u;
    u.key = kvEntry_Key(e);
    u.deleted = kvEntry_Operation(e) != kvOp_Put;
    if (!u.deleted) {
      u.value.assign(static_cast<const char*>(kvEntry_Value(e)), kvEntry_ValueLen(e));
    }
    kvEntry_Destroy(e);
    return std::optional<KeyValueUpdate>(std::move(u));
  }
}

StatusOr<std::unique_ptr<KeyValueBucket>> KeyValueBucket::Open(JetStream* js,
                                                               const std::string& bucket,
                                                               int replicas) {
  kvStore* kv = nullptr;
  if (js_KeyValue(&kv, js->context(), bucket.c_str()) == NATS_OK) {
    return std::unique_ptr<KeyValueBucket>(new KeyValueBucket(kv, bucket));
  }
  kvConfig cfg;
  kvConfig_Init(&cfg);
  cfg.Bucket = bucket.c_str();
  cfg.History = 1;
  cfg.StorageType = js_FileStorage;
  cfg.Replicas = replicas;
  natsStatus s = js_CreateKeyValue(&kv, js->context(), &cfg);
  // Another process may have created it meanwhile.
  if (s != NATS_OK) s = js_KeyValue(&kv, js->context(), bucket.c_str());
  if (s != NATS_OK) return KvError("opening bucket " + bucket, s);
  return std::unique_ptr<KeyValueBucket>(new KeyValueBucket(kv, bucket));
}

StatusOr<std::unique_ptr<KeyValueBucket>> KeyValueBucket::Bind(JetStream* js,
                                                               const std::string& bucket) {
  kvStore* kv = nullptr;
  const natsStatus s = js_KeyValue(&kv, js->context(), bucket.c_str());
  if (s != NATS_OK) return KvError("binding bucket " + bucket, s);
  return std::unique_ptr<KeyValueBucket>(new KeyValueBucket(kv, bucket));
}

KeyValueBucket::~KeyValueBucket() { kvStore_Destroy(kv_); }

Status KeyValueBucket::Put(const std::string& key, const std::string& value) {
  uint64_t revision = 0;
  const natsStatus s =
      kvStore_Put(&revision, kv_, key.c_str(), value.data(), static_cast<int>(value.size()));
  if (s != NATS_OK) return KvError(name_ + " put " + key, s);
  return OkStatus();
}

StatusOr<std::optional<std::string>> KeyValueBucket::Get(const std::string& key) {
  kvEntry* e = nullptr;
  const natsStatus s = kvStore_Get(&e, kv_, key.c_str());
  if (s == NATS_NOT_FOUND) return std::optional<std::string>();
  if (s != NATS_OK) return KvError(name_ + " get " + key, s);
  std::optional<std::string> value;
  if (kvEntry_Operation(e) == kvOp_Put) {
    value.emplace(static_cast<const char*>(kvEntry_Value(e)), kvEntry_ValueLen(e));
  }
  kvEntry_Destroy(e);
  return value;
}

StatusOr<std::map<std::string, std::string>> KeyValueBucket::ReadAll() {
  PRISM_ASSIGN_OR_RETURN(auto entries, ReadAllEntries());
  std::map<std::string, std::string> out;
  for (auto& [key, e] : entries) out[key] = std::move(e.value);
  return out;
}

StatusOr<std::map<std::string, KeyValueEntry>> KeyValueBucket::ReadAllEntries() {
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<KeyValueWatcher> w, Watch());
  std::map<std::string, KeyValueEntry> out;
  // Until the initial-state marker: kvWatcher_Next gives a null entry once every value is given.
  while (true) {
    kvEntry* e = nullptr;
    const natsStatus s = kvWatcher_Next(&e, w->w_, 5000);
    if (s != NATS_OK) return KvError("reading " + name_, s);
    if (e == nullptr) return out;
    if (kvEntry_Operation(e) == kvOp_Put) {
      KeyValueEntry& entry = out[kvEntry_Key(e)];
      entry.value.assign(static_cast<const char*>(kvEntry_Value(e)), kvEntry_ValueLen(e));
      entry.revision = kvEntry_Revision(e);
    } else {
      out.erase(kvEntry_Key(e));
    }
    kvEntry_Destroy(e);
  }
}

StatusOr<uint64_t> KeyValueBucket::Create(const std::string& key, const std::string& value) {
  uint64_t revision = 0;
  const natsStatus s =
      kvStore_Create(&revision, kv_, key.c_str(), value.data(), static_cast<int>(value.size()));
  if (s != NATS_OK) return KvError(name_ + " create " + key, s);
  return revision;
}

StatusOr<uint64_t> KeyValueBucket::Update(const std::string& key, const std::string& value,
                                          uint64_t last_revision) {
  uint64_t revision = 0;
  const natsStatus s = kvStore_Update(&revision, kv_, key.c_str(), value.data(),
                                      static_cast<int>(value.size()), last_revision);
  if (s != NATS_OK) {
    return KvError(fmt::format("{} update {} at revision {}", name_, key, last_revision), s);
  }
  return revision;
}

Status KeyValueBucket::Delete(const std::string& key) {
  const natsStatus s = kvStore_Delete(kv_, key.c_str());
  if (s != NATS_OK) return KvError(name_ + " delete " + key, s);
  return OkStatus();
}

StatusOr<std::unique_ptr<KeyValueWatcher>> KeyValueBucket::Watch() {
  kvWatcher* w = nullptr;
  const natsStatus s = kvStore_WatchAll(&w, kv_, nullptr);
  if (s != NATS_OK) return KvError("watching " + name_, s);
  return std::make_unique<KeyValueWatcher>(w);
}

}  // namespace prism::scaleout
