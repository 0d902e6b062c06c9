#include "ingest/ipfix/export_decoder.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "core/big_endian.h"
#include "core/ntp_time.h"

namespace prism::ingest {
namespace {

constexpr uint16_t kVarLen = 0xFFFF;
constexpr uint16_t kEnterpriseBit = 0x8000;
constexpr int64_t kNsPerSecond = 1'000'000'000;
constexpr int64_t kNsPerMs = 1'000'000;
constexpr uint16_t kPrismIeRoceDestQp = 1;
constexpr uint16_t kPrismIeObservationPoint = 2;
constexpr size_t kMaxSamplersPerDomain = 1024;
constexpr size_t kMaxDomains = 65536;


// What a template field means to us, resolved once per template.
enum class Act : uint8_t {
  kSkip,
  kSrcV4, kDstV4, kSrcV6, kDstV6,
  kStartS, kEndS, kStartMs, kEndMs, kStartNtp, kEndNtp,
  kStartUptimeMs, kEndUptimeMs,          // 22 / 21: ms since exporter boot
  kStartDeltaUs, kEndDeltaUs,            // 158 / 159: µs before the export time
  kSystemInitMs,                         // 160
  kBytes, kPackets, kSrcPort, kDstPort, kProto,
  kSampling,                             // 34, 50, 305: 1-in-N
  kSamplingSize, kSamplingPopulation,    // 309 / 310: N = population / size
  kSamplerId,                            // 48 (v9 FLOW_SAMPLER_ID), 302 selectorId
  kQp, kPointName,
};

struct Field {
  Act act;
  uint16_t len;  // kVarLen = variable (IPFIX only)
};

struct Template {
  std::vector<Field> fields;
  size_t min_record_bytes = 0;
  bool options = false;
};

bool IsUint(uint16_t len, uint16_t max) { return len >= 1 && len <= max; }

Act Classify(uint32_t pen, uint16_t id, uint16_t len) {
  if (pen == kPrismEnterpriseNumber) {
    if (id == kPrismIeRoceDestQp && IsUint(len, 4)) return Act::kQp;
    if (id == kPrismIeObservationPoint) return Act::kPointName;
    return Act::kSkip;
  }
  if (pen != 0) return Act::kSkip;
  switch (id) {
    case 8: return len == 4 ? Act::kSrcV4 : Act::kSkip;
    case 12: return len == 4 ? Act::kDstV4 : Act::kSkip;
    case 27: return len == 16 ? Act::kSrcV6 : Act::kSkip;
    case 28: return len == 16 ? Act::kDstV6 : Act::kSkip;
    case 150: return len == 4 ? Act::kStartS : Act::kSkip;
    case 151: return len == 4 ? Act::kEndS : Act::kSkip;
    case 152: return len == 8 ? Act::kStartMs : Act::kSkip;
    case 153: return len == 8 ? Act::kEndMs : Act::kSkip;
    case 154: case 156: return len == 8 ? Act::kStartNtp : Act::kSkip;
    case 155: case 157: return len == 8 ? Act::kEndNtp : Act::kSkip;
    case 22: return IsUint(len, 4) ? Act::kStartUptimeMs : Act::kSkip;
    case 21: return IsUint(len, 4) ? Act::kEndUptimeMs : Act::kSkip;
    case 158: return IsUint(len, 4) ? Act::kStartDeltaUs : Act::kSkip;
    case 159: return IsUint(len, 4) ? Act::kEndDeltaUs : Act::kSkip;
    case 160: return len == 8 ? Act::kSystemInitMs : Act::kSkip;
    case 1: case 85: case 23:  // octetDeltaCount, octetTotalCount, v9 OUT_BYTES
      return IsUint(len, 8) ? Act::kBytes : Act::kSkip;
    case 2: case 86: case 24:  // packetDeltaCount, packetTotalCount, v9 OUT_PKTS
      return IsUint(len, 8) ? Act::kPackets : Act::kSkip;
    case 7: return IsUint(len, 2) ? Act::kSrcPort : Act::kSkip;
    case 11: return IsUint(len, 2) ? Act::kDstPort : Act::kSkip;
    case 4: return len == 1 ? Act::kProto : Act::kSkip;
    case 305: case 34: case 50: return IsUint(len, 4) ? Act::kSampling : Act::kSkip;
    case 309: return IsUint(len, 4) ? Act::kSamplingSize : Act::kSkip;
    case 310: return IsUint(len, 4) ? Act::kSamplingPopulation : Act::kSkip;
    case 48: case 302: return IsUint(len, 8) ? Act::kSamplerId : Act::kSkip;
    default: return Act::kSkip;
  }
}

constexpr uint32_t kHaveSrc = 1, kHaveDst = 2, kHaveStart = 4, kHaveEnd = 8, kHaveBytes = 16;
constexpr uint32_t kHaveRequired = kHaveSrc | kHaveDst | kHaveStart | kHaveEnd | kHaveBytes;

struct TemplateKey {
  uint32_t exporter, domain;
  uint16_t tid;
  uint8_t version;
  friend bool operator==(const TemplateKey&, const TemplateKey&) = default;
};
struct TemplateKeyHash {
  size_t operator()(const TemplateKey& k) const {
    uint64_t h = (uint64_t{k.exporter} << 32 | k.domain) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h ^ (h >> 29) ^ (uint64_t{k.tid} << 8 | k.version));
  }
};

// What options records told us about one (exporter, domain).
struct DomainState {
  uint32_t default_sampling = 0;  // 0 = unknown
  std::unordered_map<uint64_t, uint32_t> samplers;  // sampler/selector id -> 1-in-N
  int64_t system_init_ms = -1;    // IPFIX systemInitTimeMilliseconds; -1 = unknown
};

struct ExporterState {
  IpAddr addr;
  uint16_t port = 0;
  PointId default_point = kNoPoint;
};

// Header fields of the message being decoded, for relative timestamps.
struct MessageContext {
  uint8_t version = 10;
  uint32_t export_s = 0;      // IPFIX export time / v9 unix_secs
  uint32_t sys_uptime_ms = 0;  // v9 only
  uint32_t exporter = 0;
  uint32_t domain = 0;
  uint64_t offset = 0;
};

}  // namespace

struct ExportDecoder::Impl {
  std::string name;
  FlowSink* sink;
  PointTable* points;
  Stats* stats;
  int log_cap;
  uint64_t problems = 0;
  std::unordered_map<TemplateKey, Template, TemplateKeyHash> templates;
  std::unordered_map<uint64_t, DomainState> domains;  // (exporter << 32 | domain)
  std::vector<ExporterState> exporters;
  // Looked up by string_view: no string is built per record.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>()(v); }
  };
  std::unordered_map<std::string, PointId, NameHash, std::equal_to<>> point_names;
  // Point names repeat record after record but interleave (one message carries the records of
  // many switches): a direct-mapped cache of short names with a cheap hash answers most lookups
  // without the map's string hash and node chase (together a tenth of decoding).
  struct CachedName {
    uint8_t len = 0;
    char bytes[31];
    PointId id = kNoPoint;
  };
  static constexpr size_t kNameCacheSlots = 256;
  std::array<CachedName, kNameCacheSlots> name_cache{};
  static size_t CheapHash(std::string_view v) {
    uint64_t head = 0, tail = 0;
    std::memcpy(&head, v.data(), std::min<size_t>(8, v.size()));
    if (v.size() > 8) std::memcpy(&tail, v.data() + v.size() - std::min<size_t>(8, v.size() - 8),
                                  std::min<size_t>(8, v.size() - 8));
    const uint64_t h = (head * 0x9E3779B97F4A7C15ull) ^ (tail * 0xC2B2AE3D27D4EB4Full) ^ v.size();
    return static_cast<size_t>(h >> 56);  // 8 bits: kNameCacheSlots
  }
  uint64_t* records;

  void Count(Stat s, uint64_t n = 1) {
    if (stats != nullptr) stats->Add(s, n);
  }
  template <typename E, typename G>
  void Problem(Stat s, uint64_t offset, const E& expected, const G& got) {
    Count(s);
    if (++problems <= static_cast<uint64_t>(log_cap)) {
      fmt::print(stderr, "{}: byte {}: expected {}, got {}\n", name, offset, expected, got);
    }
  }

  DomainState* Domain(uint32_t exporter, uint32_t domain) {
    uint64_t key = (uint64_t{exporter} << 32) | domain;
    auto it = domains.find(key);
    if (it != domains.end()) return &it->second;
    if (domains.size() >= kMaxDomains) return nullptr;
    return &domains[key];
  }

  PointId InternPoint(std::string_view name_view) {
    if (name_view.empty() || points == nullptr) return kNoPoint;
    CachedName* slot = nullptr;
    if (name_view.size() <= sizeof(CachedName::bytes)) {
      slot = &name_cache[CheapHash(name_view)];
      if (slot->id != kNoPoint && slot->len == name_view.size() &&
          std::memcmp(slot->bytes, name_view.data(), name_view.size()) == 0)
        return slot->id;
    }
    PointId id;
    auto it = point_names.find(name_view);
    if (it != point_names.end()) {
      id = it->second;
    } else {
      id = points->Intern(name_view);
      if (point_names.size() < 65536) point_names.emplace(std::string(name_view), id);
    }
    if (slot != nullptr) {
      slot->len = static_cast<uint8_t>(name_view.size());
      std::memcpy(slot->bytes, name_view.data(), name_view.size());
      slot->id = id;
    }
    return id;
  }

  void DecodeIpfix(const uint8_t* msg, size_t len, MessageContext ctx);
  void DecodeV9(const uint8_t* msg, size_t len, MessageContext ctx);
  // Template records of one set; `v9_options` selects the v9 options layout.
  void DecodeTemplateSet(const uint8_t* body, size_t n, const MessageContext& ctx, bool options,
                         uint64_t offset);
  void DecodeV9OptionsTemplateSet(const uint8_t* body, size_t n, const MessageContext& ctx,
                                  uint64_t offset);
  void StoreTemplate(const MessageContext& ctx, uint16_t tid, Template t, uint64_t offset);
  void DecodeDataSet(const MessageContext& ctx, uint16_t set_id, const uint8_t* body, size_t n,
                     uint64_t offset);
};

ExportDecoder::ExportDecoder(std::string name, FlowSink* sink, PointTable* points, Stats* stats,
                             int problem_log_cap)
    : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  impl_->sink = sink;
  impl_->points = points;
  impl_->stats = stats;
  impl_->log_cap = problem_log_cap;
  impl_->records = &records_;
}

ExportDecoder::~ExportDecoder() = default;

uint32_t ExportDecoder::AddExporter(const IpAddr& addr, uint16_t port,
                                    const std::string& point_name) {
  auto& ex = impl_->exporters;
  for (size_t i = ex.size(); i-- > 0;) {  // few exporters; newest first
    if (ex[i].addr == addr && ex[i].port == port) return static_cast<uint32_t>(i);
  }
  if (ex.size() >= kMaxExporters) return static_cast<uint32_t>(ex.size() - 1);
  ex.push_back(ExporterState{addr, port, impl_->InternPoint(point_name)});
  return static_cast<uint32_t>(ex.size() - 1);
}

void ExportDecoder::Finish() {
  if (impl_->problems > static_cast<uint64_t>(impl_->log_cap)) {
    fmt::print(stderr, "{}: {} more problems not shown\n", impl_->name,
               impl_->problems - impl_->log_cap);
    impl_->problems = impl_->log_cap;  // print once
  }
}

void ExportDecoder::DecodeMessage(std::span<const uint8_t> msg, uint32_t exporter,
                                  uint64_t offset) {
  if (impl_->exporters.empty()) AddExporter(IpAddr(), 0, "");
  if (exporter >= impl_->exporters.size()) exporter = 0;
  MessageContext ctx;
  ctx.exporter = exporter;
  ctx.offset = offset;
  if (msg.size() < 2) {
    impl_->Problem(Stat::ipfix_bad_message, offset, "an export message header",
                   fmt::format("{} bytes", msg.size()));
    return;
  }
  const uint16_t version = LoadBe16(msg.data());
  if (version == 10) {
    if (msg.size() < kIpfixHeaderBytes || LoadBe16(msg.data() + 2) != msg.size()) {
      impl_->Problem(Stat::ipfix_bad_message, offset, "an IPFIX message whose length field "
                     "matches its size", fmt::format("{} bytes", msg.size()));
      return;
    }
    ++messages_;
    impl_->Count(Stat::ipfix_messages);
    ctx.version = 10;
    ctx.export_s = LoadBe32(msg.data() + 4);
    ctx.domain = LoadBe32(msg.data() + 12);
    impl_->DecodeIpfix(msg.data(), msg.size(), ctx);
  } else if (version == 9) {
    if (msg.size() < kNetflowV9HeaderBytes) {
      impl_->Problem(Stat::ipfix_bad_message, offset, "a 20-byte NetFlow v9 header",
                     fmt::format("{} bytes", msg.size()));
      return;
    }
    ++messages_;
    impl_->Count(Stat::netflow_v9_packets);
    ctx.version = 9;
    ctx.sys_uptime_ms = LoadBe32(msg.data() + 4);
    ctx.export_s = LoadBe32(msg.data() + 8);
    ctx.domain = LoadBe32(msg.data() + 16);
    impl_->DecodeV9(msg.data(), msg.size(), ctx);
  } else {
    impl_->Problem(Stat::ipfix_bad_message, offset, "IPFIX version 10 or NetFlow version 9",
                   version);
  }
}

bool LooksLikeExportDatagram(std::span<const uint8_t> p, size_t udp_payload_bytes) {
  if (p.size() < 4) return false;
  const uint16_t version = LoadBe16(p.data());
  if (version == 10) {
    return udp_payload_bytes >= kIpfixHeaderBytes && LoadBe16(p.data() + 2) == udp_payload_bytes;
  }
  if (version != 9 || udp_payload_bytes < kNetflowV9HeaderBytes + 4 ||
      p.size() < kNetflowV9HeaderBytes + 4) {
    return false;
  }
  // Flowsets must tile the datagram exactly (as far as captured).
  size_t pos = kNetflowV9HeaderBytes;
  int sets = 0;
  while (pos + 4 <= p.size()) {
    uint16_t id = LoadBe16(p.data() + pos);
    size_t len = LoadBe16(p.data() + pos + 2);
    if ((id > 1 && id < 256) || len < 4) return false;
    pos += len;
    ++sets;
  }
  return sets > 0 && (pos == udp_payload_bytes || p.size() < udp_payload_bytes);
}

bool ExportDecoder::OnCapturedDatagram(const PacketMeta& m) {
  if (!m.has_l4 || m.proto != 17) return false;
  if (!LooksLikeExportDatagram(m.udp_payload, m.payload_bytes)) return false;
  if (m.udp_payload.size() < m.payload_bytes) {
    // An export packet cut by the snaplen cannot be decoded (its records are the payload).
    if (impl_->stats != nullptr) impl_->stats->Add(Stat::packet_truncated);
    return true;
  }
  uint32_t exporter = AddExporter(m.src, m.src_port, m.src.ToString());
  DecodeMessage(m.udp_payload, exporter, 0);
  return true;
}

void ExportDecoder::Impl::DecodeIpfix(const uint8_t* msg, size_t len, MessageContext ctx) {
  size_t p = kIpfixHeaderBytes;
  while (p < len) {
    uint64_t set_offset = ctx.offset + p;
    if (len - p < 4) {
      Problem(Stat::ipfix_bad_set, set_offset, "a 4-byte set header",
              fmt::format("{} bytes left in the message", len - p));
      return;
    }
    uint16_t set_id = LoadBe16(msg + p);
    size_t set_len = LoadBe16(msg + p + 2);
    if (set_len < 4 || set_len > len - p) {
      Problem(Stat::ipfix_bad_set, set_offset,
              fmt::format("a set length between 4 and {}", len - p), set_len);
      return;
    }
    const uint8_t* body = msg + p + 4;
    size_t body_len = set_len - 4;
    if (set_id == 2 || set_id == 3) {
      DecodeTemplateSet(body, body_len, ctx, set_id == 3, set_offset + 4);
    } else if (set_id >= 256) {
      DecodeDataSet(ctx, set_id, body, body_len, set_offset + 4);
    } else {
      Problem(Stat::ipfix_bad_set, set_offset, "set id 2, 3 or >= 256", set_id);
    }
    p += set_len;
  }
}

void ExportDecoder::Impl::DecodeV9(const uint8_t* msg, size_t len, MessageContext ctx) {
  size_t p = kNetflowV9HeaderBytes;
  while (p < len) {
    uint64_t set_offset = ctx.offset + p;
    if (len - p < 4) {
      // Trailing bytes shorter than a flowset header: exporters pad datagrams; ignore.
      return;
    }
    uint16_t set_id = LoadBe16(msg + p);
    size_t set_len = LoadBe16(msg + p + 2);
    if (set_len < 4 || set_len > len - p) {
      Problem(Stat::ipfix_bad_set, set_offset,
              fmt::format("a flowset length between 4 and {}", len - p), set_len);
      return;
    }
    const uint8_t* body = msg + p + 4;
    size_t body_len = set_len - 4;
    if (set_id == 0) {
      DecodeTemplateSet(body, body_len, ctx, false, set_offset + 4);
    } else if (set_id == 1) {
      DecodeV9OptionsTemplateSet(body, body_len, ctx, set_offset + 4);
    } else if (set_id >= 256) {
      DecodeDataSet(ctx, set_id, body, body_len, set_offset + 4);
    } else {
      Problem(Stat::ipfix_bad_set, set_offset, "flowset id 0, 1 or >= 256", set_id);
    }
    p += set_len;
  }
}

void ExportDecoder::Impl::StoreTemplate(const MessageContext& ctx, uint16_t tid, Template t,
                                        uint64_t offset) {
  if (t.min_record_bytes == 0) {
    Problem(Stat::ipfix_bad_template, offset,
            fmt::format("template {} to describe at least one byte", tid), "0 bytes");
    return;
  }
  TemplateKey key{ctx.exporter, ctx.domain, tid, ctx.version};
  auto it = templates.find(key);
  if (it != templates.end()) {
    it->second = std::move(t);
  } else if (templates.size() >= kMaxTemplates) {
    Count(Stat::ipfix_template_limit);
  } else {
    templates.emplace(key, std::move(t));
  }
}

void ExportDecoder::Impl::DecodeTemplateSet(const uint8_t* body, size_t n,
                                            const MessageContext& ctx, bool options,
                                            uint64_t offset) {
  const bool ipfix = ctx.version == 10;
  size_t q = 0;
  while (n - q >= 4) {  // fewer bytes are padding
    uint64_t rec_offset = offset + q;
    uint16_t tid = LoadBe16(body + q);
    uint16_t count = LoadBe16(body + q + 2);
    q += 4;
    if (tid < 256) {
      if (!ipfix && tid == 0 && count == 0) break;  // v9 padding of zeros
      Problem(Stat::ipfix_bad_template, rec_offset, "a template id >= 256", tid);
      return;  // the rest of the set cannot be framed
    }
    if (count == 0) {  // withdrawal
      templates.erase(TemplateKey{ctx.exporter, ctx.domain, tid, ctx.version});
      continue;
    }
    uint16_t scope = 0;
    if (options) {
      if (n - q < 2) {
        Problem(Stat::ipfix_bad_template, rec_offset, "a scope field count", "the end of the set");
        return;
      }
      scope = LoadBe16(body + q);
      q += 2;
      if (scope == 0 || scope > count) {
        Problem(Stat::ipfix_bad_template, rec_offset,
                fmt::format("a scope field count between 1 and {}", count), scope);
        return;
      }
    }
    Template t;
    t.options = options;
    t.fields.reserve(std::min<size_t>(count, (n - q) / 4 + 1));
    for (uint16_t i = 0; i < count; ++i) {
      if (n - q < 4) {
        Problem(Stat::ipfix_bad_template, rec_offset,
                fmt::format("{} field specifiers in template {}", count, tid),
                fmt::format("the end of the set after {}", i));
        return;
      }
      uint16_t id = LoadBe16(body + q);
      uint16_t flen = LoadBe16(body + q + 2);
      q += 4;
      uint32_t pen = 0;
      if (ipfix && (id & kEnterpriseBit)) {
        if (n - q < 4) {
          Problem(Stat::ipfix_bad_template, rec_offset,
                  fmt::format("an enterprise number for field {} of template {}", i, tid),
                  "the end of the set");
          return;
        }
        pen = LoadBe32(body + q);
        q += 4;
        id = static_cast<uint16_t>(id & ~kEnterpriseBit);
      }
      Act act = Classify(pen, id, flen);  // IPFIX scope fields are IEs too (selectorId)
      t.fields.push_back(Field{act, flen});
      t.min_record_bytes += flen == kVarLen ? 1 : flen;
    }
    StoreTemplate(ctx, tid, std::move(t), rec_offset);
  }
}

void ExportDecoder::Impl::DecodeV9OptionsTemplateSet(const uint8_t* body, size_t n,
                                                     const MessageContext& ctx, uint64_t offset) {
  size_t q = 0;
  while (n - q >= 6) {  // fewer bytes are padding
    uint64_t rec_offset = offset + q;
    uint16_t tid = LoadBe16(body + q);
    size_t scope_len = LoadBe16(body + q + 2);
    size_t option_len = LoadBe16(body + q + 4);
    q += 6;
    if (tid < 256) {
      if (tid == 0 && scope_len == 0 && option_len == 0) break;  // zero padding
      Problem(Stat::ipfix_bad_template, rec_offset, "an options template id >= 256", tid);
      return;
    }
    if (scope_len % 4 != 0 || option_len % 4 != 0 || scope_len + option_len > n - q) {
      Problem(Stat::ipfix_bad_template, rec_offset,
              fmt::format("scope and option lengths (multiples of 4) within the {} bytes left",
                          n - q),
              fmt::format("{} and {}", scope_len, option_len));
      return;
    }
    Template t;
    t.options = true;
    for (size_t i = 0; i < (scope_len + option_len) / 4; ++i) {
      uint16_t id = LoadBe16(body + q);
      uint16_t flen = LoadBe16(body + q + 2);
      q += 4;
      Act act = i < scope_len / 4 ? Act::kSkip : Classify(0, id, flen);
      t.fields.push_back(Field{act, flen});
      t.min_record_bytes += flen;
    }
    StoreTemplate(ctx, tid, std::move(t), rec_offset);
  }
}

void ExportDecoder::Impl::DecodeDataSet(const MessageContext& ctx, uint16_t tid,
                                        const uint8_t* body, size_t n, uint64_t offset) {
  auto it = templates.find(TemplateKey{ctx.exporter, ctx.domain, tid, ctx.version});
  if (it == templates.end()) {
    Problem(Stat::ipfix_unknown_template, offset - 4,
            fmt::format("a template for data set id {} in domain {}", tid, ctx.domain),
            "none seen before it");
    return;
  }
  const Template& t = it->second;
  const ExporterState& exporter = exporters[ctx.exporter];
  DomainState* domain = Domain(ctx.exporter, ctx.domain);
  const uint8_t* p = body;
  const uint8_t* end = body + n;
  while (static_cast<size_t>(end - p) >= t.min_record_bytes) {  // fewer bytes are padding
    const uint8_t* rec_start = p;
    FlowRecord r;
    uint32_t have = 0;
    std::string_view point_name;
    bool has_point_field = false;
    bool fits = true;
    uint32_t sampling = 0, sampling_size = 0, sampling_population = 0;
    bool has_sampler = false;
    uint64_t sampler = 0;
    int64_t uptime_start_ms = -1, uptime_end_ms = -1, init_ms = -1;
    int64_t delta_start_us = -1, delta_end_us = -1;
    for (const Field& f : t.fields) {
      size_t len = f.len;
      if (len == kVarLen && ctx.version == 10) {
        if (p == end) {
          fits = false;
          break;
        }
        len = *p++;
        if (len == 255) {
          if (end - p < 2) {
            fits = false;
            break;
          }
          len = LoadBe16(p);
          p += 2;
        }
      }
      if (static_cast<size_t>(end - p) < len) {
        fits = false;
        break;
      }
      switch (f.act) {
        case Act::kSkip: break;
        case Act::kSrcV4: r.src = IpAddr::FromV4(LoadBe32(p)); have |= kHaveSrc; break;
        case Act::kDstV4: r.dst = IpAddr::FromV4(LoadBe32(p)); have |= kHaveDst; break;
        case Act::kSrcV6: r.src = IpAddr::FromV6(p); have |= kHaveSrc; break;
        case Act::kDstV6: r.dst = IpAddr::FromV6(p); have |= kHaveDst; break;
        case Act::kStartS: r.start_ns = int64_t{LoadBe32(p)} * kNsPerSecond; have |= kHaveStart; break;
        case Act::kEndS: r.end_ns = int64_t{LoadBe32(p)} * kNsPerSecond; have |= kHaveEnd; break;
        case Act::kStartMs:
        case Act::kEndMs: {
          uint64_t ms = LoadBe64(p);
          if (ms <= static_cast<uint64_t>(INT64_MAX / kNsPerMs)) {
            bool start = f.act == Act::kStartMs;
            (start ? r.start_ns : r.end_ns) = static_cast<int64_t>(ms) * kNsPerMs;
            have |= start ? kHaveStart : kHaveEnd;
          }
          break;
        }
        case Act::kStartNtp: r.start_ns = NtpToUnixNs(LoadBe64(p)); have |= kHaveStart; break;
        case Act::kEndNtp: r.end_ns = NtpToUnixNs(LoadBe64(p)); have |= kHaveEnd; break;
        case Act::kStartUptimeMs: uptime_start_ms = static_cast<int64_t>(LoadBeUint(p, len)); break;
        case Act::kEndUptimeMs: uptime_end_ms = static_cast<int64_t>(LoadBeUint(p, len)); break;
        case Act::kStartDeltaUs: delta_start_us = static_cast<int64_t>(LoadBeUint(p, len)); break;
        case Act::kEndDeltaUs: delta_end_us = static_cast<int64_t>(LoadBeUint(p, len)); break;
        case Act::kSystemInitMs: {
          uint64_t ms = LoadBe64(p);
          if (ms <= static_cast<uint64_t>(INT64_MAX / kNsPerMs / 2)) init_ms = static_cast<int64_t>(ms);
          break;
        }
        case Act::kBytes: r.bytes = LoadBeUint(p, len); have |= kHaveBytes; break;
        case Act::kPackets: r.packets = LoadBeUint(p, len); break;
        case Act::kSrcPort: r.src_port = static_cast<uint16_t>(LoadBeUint(p, len)); break;
        case Act::kDstPort: r.dst_port = static_cast<uint16_t>(LoadBeUint(p, len)); break;
        case Act::kProto: r.proto = *p; break;
        case Act::kSampling: sampling = static_cast<uint32_t>(LoadBeUint(p, len)); break;
        case Act::kSamplingSize: sampling_size = static_cast<uint32_t>(LoadBeUint(p, len)); break;
        case Act::kSamplingPopulation:
          sampling_population = static_cast<uint32_t>(LoadBeUint(p, len));
          break;
        case Act::kSamplerId: sampler = LoadBeUint(p, len); has_sampler = true; break;
        case Act::kQp: r.qp = static_cast<uint32_t>(LoadBeUint(p, len)); break;
        case Act::kPointName:
          point_name = std::string_view(reinterpret_cast<const char*>(p), len);
          has_point_field = true;
          break;
      }
      p += len;
    }
    uint64_t rec_offset = offset + static_cast<uint64_t>(rec_start - body);
    if (!fits) {
      Problem(Stat::ipfix_bad_record, rec_offset,
              fmt::format("a record of template {} within its set", tid),
              fmt::format("{} bytes left", end - rec_start));
      return;  // the rest of the set cannot be framed
    }
    if (sampling == 0 && sampling_size != 0 && sampling_population >= sampling_size) {
      sampling = sampling_population / sampling_size;
    }
    if (t.options) {
      Count(Stat::ipfix_options_record);
      if (init_ms >= 0 && domain != nullptr) domain->system_init_ms = init_ms;
      if (sampling != 0 && domain != nullptr) {
        if (has_sampler) {
          if (domain->samplers.size() < kMaxSamplersPerDomain ||
              domain->samplers.count(sampler) != 0) {
            domain->samplers[sampler] = sampling;
          }
        } else {
          domain->default_sampling = sampling;
        }
      }
      continue;
    }
    // Relative timestamps, resolved against the message header or the exporter's boot time.
    auto from_uptime = [&](int64_t uptime_ms, int64_t* out, uint32_t bit) {
      if (uptime_ms < 0) return;
      if (ctx.version == 9) {
        // sysUptime and the switched times share one 32-bit ms clock; it may wrap between them.
        int64_t back_ms = static_cast<int32_t>(ctx.sys_uptime_ms - static_cast<uint32_t>(uptime_ms));
        *out = (int64_t{ctx.export_s} * 1000 - back_ms) * kNsPerMs;
        have |= bit;
      } else {
        int64_t base = init_ms >= 0 ? init_ms : (domain != nullptr ? domain->system_init_ms : -1);
        if (base < 0) return;
        *out = (base + uptime_ms) * kNsPerMs;
        have |= bit;
      }
    };
    if (!(have & kHaveStart)) from_uptime(uptime_start_ms, &r.start_ns, kHaveStart);
    if (!(have & kHaveEnd)) from_uptime(uptime_end_ms, &r.end_ns, kHaveEnd);
    if (!(have & kHaveStart) && delta_start_us >= 0) {
      r.start_ns = int64_t{ctx.export_s} * kNsPerSecond - delta_start_us * 1000;
      have |= kHaveStart;
    }
    if (!(have & kHaveEnd) && delta_end_us >= 0) {
      r.end_ns = int64_t{ctx.export_s} * kNsPerSecond - delta_end_us * 1000;
      have |= kHaveEnd;
    }
    if ((have & kHaveRequired) != kHaveRequired) {
      Problem(Stat::ipfix_bad_record, rec_offset,
              fmt::format("source and destination address, start and end time and octet "
                          "count in template {}",
                          tid),
              "a record without some of them");
      continue;
    }
    if (r.end_ns < r.start_ns) {
      Problem(Stat::ipfix_bad_record, rec_offset, "flow end >= flow start",
              fmt::format("end {} ns < start {} ns", r.end_ns, r.start_ns));
      continue;
    }
    if (sampling == 0 && domain != nullptr) {
      if (has_sampler) {
        auto s = domain->samplers.find(sampler);
        if (s != domain->samplers.end()) sampling = s->second;
      }
      if (sampling == 0) sampling = domain->default_sampling;
    }
    r.sampling_rate = sampling == 0 ? 1 : sampling;
    if (has_point_field) {
      while (!point_name.empty() && point_name.back() == '\0') point_name.remove_suffix(1);
      r.point = point_name.empty() ? exporter.default_point : InternPoint(point_name);
    } else {
      r.point = exporter.default_point;
    }
    ++*records;
    Count(Stat::records_read);
    sink->OnRecord(r);
  }
}

}  // namespace prism::ingest
