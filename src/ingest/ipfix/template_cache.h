// File: ingest/ipfix/template_cache.h
// The export decoder's templates (export_decoder.h), bounded, and shared fairly between
// exporters. Over UDP anyone can send templates: without limits one source (or a spoofed one)
// sending 65,536 templates fills a global cache and every other exporter's records are then
// dropped for want of a template. So:
//   - a quota per source — one exporter address and observation domain (IPFIX) or source id
//     (NetFlow v9), whatever its ports —, a quota per exporter address (all its domains: one
//     address cannot claim the cache by spreading templates over many domains), and a bound for
//     all exporters together;
//   - RFC 7011 §8 withdrawals: one template, or every (options) template of a domain;
//   - over UDP, expiry (RFC 7011 §8.4: a collector must expire templates that are not refreshed;
//     exporters resend them periodically): a template not received again for `timeout_ns` of
//     collector time is dropped.
// A template that replaces one the cache already holds is always accepted and counts as a
// refresh. Expired templates are removed when looked up, and in sweeps before a full cache or
// quota turns a template away.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "core/ip_addr.h"
#include "ingest/ipfix/ipfix_template.h"

namespace prism::ingest {

struct TemplateLimits {
  size_t max_templates = 65536;              // all exporters together
  size_t max_templates_per_exporter = 4096;  // one exporter address, all its domains
  size_t max_templates_per_source = 1024;    // one exporter address + observation domain
  // Collector time a template lives without being received again; 0 = for ever (files and
  // captures, which carry their templates once).
  int64_t timeout_ns = 0;
};

// The default lifetime of UDP templates: 30 minutes, three times the 10 minutes after which
// exporters commonly resend them (the templateLifeTime default of UDP collectors such as
// ipfixcol2 is the same 1,800 s).
inline constexpr int64_t kUdpTemplateTimeoutNs = 1800 * int64_t{1'000'000'000};

// A template's identity: exporter handle (ExportDecoder::AddExporter), observation domain /
// source id, template id and protocol version (IPFIX and NetFlow v9 ids are separate spaces).
struct TemplateKey {
  uint32_t exporter = 0, domain = 0;
  uint16_t tid = 0;
  uint8_t version = 10;
  friend bool operator==(const TemplateKey&, const TemplateKey&) = default;
};

// Whose quota a template counts against: the exporter's address and the observation domain.
struct TemplateSource {
  IpAddr addr;
  uint32_t domain = 0;
  friend bool operator==(const TemplateSource&, const TemplateSource&) = default;
};

class TemplateCache {
 public:
  explicit TemplateCache(TemplateLimits limits = {}) : limits_(limits) {}

  enum class StoreResult {
    kAdded,
    kReplaced,       // the key was held: new fields, refreshed
    kSourceQuota,    // the source holds max_templates_per_source: dropped
    kExporterQuota,  // the exporter address holds max_templates_per_exporter: dropped
    kFull,           // the cache holds max_templates: dropped
  };
  // Templates that expired and were swept to make room are added to *expired (when given).
  StoreResult Store(const TemplateKey& key, const TemplateSource& source, Template t,
                    int64_t now_ns, size_t* expired = nullptr);

  // The template of `key`, or null when there is none or it expired (then it is removed and
  // *expired, when given, is set).
  const Template* Find(const TemplateKey& key, int64_t now_ns, bool* expired = nullptr);

  // Withdrawals (RFC 7011 §8.1): one template; every template, or every options template, of
  // (exporter, domain, version). Return how many were removed.
  size_t Withdraw(const TemplateKey& key);
  size_t WithdrawAll(uint32_t exporter, uint32_t domain, uint8_t version, bool options);

  // Removes every template not received for timeout_ns at `now_ns`; returns how many.
  size_t Expire(int64_t now_ns);

  size_t size() const { return entries_.size(); }
  size_t SourceSize(const TemplateSource& source) const;
  size_t ExporterSize(const IpAddr& addr) const;
  const TemplateLimits& limits() const { return limits_; }

 private:
  struct KeyHash {
    size_t operator()(const TemplateKey& k) const;
  };
  struct SourceHash {
    size_t operator()(const TemplateSource& s) const;
  };
  struct Entry {
    Template t;
    TemplateSource source;
    int64_t refreshed_ns = 0;
  };
  bool Expired(const Entry& e, int64_t now_ns) const;
  void Erase(std::unordered_map<TemplateKey, Entry, KeyHash>::iterator it);

  TemplateLimits limits_;
  std::unordered_map<TemplateKey, Entry, KeyHash> entries_;
  std::unordered_map<TemplateSource, size_t, SourceHash> per_source_;
  std::unordered_map<IpAddr, size_t, IpAddrHash> per_exporter_;
};

}  // namespace prism::ingest
