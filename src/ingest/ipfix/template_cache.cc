#include "ingest/ipfix/template_cache.h"

#include <optional>
#include <utility>

namespace prism::ingest {

size_t TemplateCache::KeyHash::operator()(const TemplateKey& k) const {
  const uint64_t h = (uint64_t{k.exporter} << 32 | k.domain) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h ^ (h >> 29) ^ (uint64_t{k.tid} << 8 | k.version));
}

size_t TemplateCache::SourceHash::operator()(const TemplateSource& s) const {
  const uint64_t h = (IpAddrHash()(s.addr) ^ s.domain) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h ^ (h >> 31));
}

bool TemplateCache::Expired(const Entry& e, int64_t now_ns) const {
  return limits_.timeout_ns > 0 && now_ns - e.refreshed_ns > limits_.timeout_ns;
}

void TemplateCache::Erase(std::unordered_map<TemplateKey, Entry, KeyHash>::iterator it) {
  auto s = per_source_.find(it->second.source);
  if (s != per_source_.end() && --s->second == 0) per_source_.erase(s);
  auto e = per_exporter_.find(it->second.source.addr);
  if (e != per_exporter_.end() && --e->second == 0) per_exporter_.erase(e);
  entries_.erase(it);
}

TemplateCache::StoreResult TemplateCache::Store(const TemplateKey& key,
                                                const TemplateSource& source, Template t,
                                                int64_t now_ns, size_t* expired) {
  if (auto it = entries_.find(key); it != entries_.end()) {
    it->second.t = std::move(t);
    it->second.refreshed_ns = now_ns;
    return StoreResult::kReplaced;
  }
  auto refusal = [&]() -> std::optional<StoreResult> {
    if (SourceSize(source) >= limits_.max_templates_per_source) return StoreResult::kSourceQuota;
    if (ExporterSize(source.addr) >= limits_.max_templates_per_exporter) {
      return StoreResult::kExporterQuota;
    }
    if (entries_.size() >= limits_.max_templates) return StoreResult::kFull;
    return std::nullopt;
  };
  std::optional<StoreResult> refused = refusal();
  if (refused && limits_.timeout_ns > 0) {  // templates that expired make room first
    const size_t n = Expire(now_ns);
    if (expired != nullptr) *expired += n;
    refused = refusal();
  }
  if (refused) return *refused;
  entries_.emplace(key, Entry{std::move(t), source, now_ns});
  ++per_source_[source];
  ++per_exporter_[source.addr];
  return StoreResult::kAdded;
}

const Template* TemplateCache::Find(const TemplateKey& key, int64_t now_ns, bool* expired) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  if (Expired(it->second, now_ns)) {
    Erase(it);
    if (expired != nullptr) *expired = true;
    return nullptr;
  }
  return &it->second.t;
}

size_t TemplateCache::Withdraw(const TemplateKey& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return 0;
  Erase(it);
  return 1;
}

size_t TemplateCache::WithdrawAll(uint32_t exporter, uint32_t domain, uint8_t version,
                                  bool options) {
  size_t n = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const TemplateKey& k = it->first;
    auto next = std::next(it);
    if (k.exporter == exporter && k.domain == domain && k.version == version &&
        it->second.t.options == options) {
      Erase(it);
      ++n;
    }
    it = next;
  }
  return n;
}

size_t TemplateCache::Expire(int64_t now_ns) {
  if (limits_.timeout_ns <= 0) return 0;
  size_t n = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (Expired(it->second, now_ns)) {
      Erase(it);
      ++n;
    }
    it = next;
  }
  return n;
}

size_t TemplateCache::SourceSize(const TemplateSource& source) const {
  auto it = per_source_.find(source);
  return it == per_source_.end() ? 0 : it->second;
}

size_t TemplateCache::ExporterSize(const IpAddr& addr) const {
  auto it = per_exporter_.find(addr);
  return it == per_exporter_.end() ? 0 : it->second;
}

}  // namespace prism::ingest
