#include "ingest/ipfix/export_decoder.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "core/big_endian.h"
#include "core/record_batch.h"
#include "ingest/ipfix/data_record.h"
#include "ingest/ipfix/planned_records.h"
#include "ingest/ipfix/sequence_tracker.h"
#include "ingest/ipfix/short_name_ids.h"

namespace prism::ingest {
namespace {

constexpr uint16_t kEnterpriseBit = 0x8000;
constexpr size_t kMaxDomains = 65536;

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
  TemplateCache templates;
  int64_t now_ns = 0;  // SetClock
  std::unordered_map<uint64_t, DomainState> domains;  // (exporter << 32 | domain)
  SequenceTracker sequences;                          // (exporter << 32 | domain)
  // The message being decoded: its data and options records (sequence numbers count records), and
  // whether one of its data sets could not be framed (the count is then unknown).
  uint32_t message_data_records = 0;
  uint32_t message_options_records = 0;
  bool message_uncountable = false;
  std::vector<ExporterState> exporters;
  // Looked up by string_view: no string is built per record.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>()(v); }
  };
  std::unordered_map<std::string, PointId, NameHash, std::equal_to<>> point_names;
  // Point names repeat record after record but interleave (one message carries the records of
  // many switches): short ones are answered without the map's string hash and node chase.
  ShortNameIds short_names;
  uint64_t* records;
  // A later run of a file (DeferToEarlierRun): problems kept, sequence numbers kept.
  struct SequenceObservation {
    uint64_t stream;
    uint32_t sequence, data, options;
    bool countable;
    Stat lost_stat;
  };
  bool deferred = false;
  std::vector<std::string> kept_problems;
  std::vector<SequenceObservation> kept_sequences;
  bool silent = false;  // LearnTemplates: nothing counted, nothing described
  // The fewest bytes a record of any template given so far takes (stored or not).
  size_t smallest_record_bytes = SIZE_MAX;
  // The column path: the sink's batch side (null: none) and the rows of the data set being read
  // (capacity kept between sets).
  BatchSink* batch_sink = nullptr;
  RecordBatch batch;

  void Count(Stat s, uint64_t n = 1) {
    if (stats != nullptr && !silent) stats->Add(s, n);
  }
  void StartMessage() {
    message_data_records = 0;
    message_options_records = 0;
    message_uncountable = false;
  }
  // The message's sequence number against its stream's: a gap is loss on the way (`lost_stat`
  // counts it in records or packets).
  void FollowSequence(const MessageContext& ctx, uint32_t sequence, uint32_t data, uint32_t options,
                      Stat lost_stat) {
    const uint64_t stream = (uint64_t(ctx.exporter) << 32) | ctx.domain;
    if (deferred) {
      kept_sequences.push_back({stream, sequence, data, options, !message_uncountable, lost_stat});
      return;
    }
    ObserveSequence({stream, sequence, data, options, !message_uncountable, lost_stat});
  }
  void ObserveSequence(const SequenceObservation& o) {
    const SequenceTracker::Gap gap =
        sequences.Observe(o.stream, o.sequence, o.data, o.options, o.countable);
    if (gap.lost > 0) Count(o.lost_stat, gap.lost);
    if (gap.went_back) Count(Stat::export_sequence_went_back);
  }
  template <typename E, typename G>
  void Problem(Stat s, uint64_t offset, const E& expected, const G& got) {
    if (silent) return;
    Count(s);
    if (++problems <= static_cast<uint64_t>(log_cap)) {
      std::string line =
          fmt::format("{}: byte {}: expected {}, got {}\n", name, offset, expected, got);
      if (deferred) {
        kept_problems.push_back(std::move(line));
      } else {
        std::fputs(line.c_str(), stderr);
      }
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
    if (const PointId known = short_names.Find(name_view); known != kNoPoint) return known;
    PointId id;
    auto it = point_names.find(name_view);
    if (it != point_names.end()) {
      id = it->second;
    } else {
      id = points->Intern(name_view);
      if (point_names.size() < 65536) point_names.emplace(std::string(name_view), id);
    }
    short_names.Insert(name_view, id);
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
  // Data records of one set: read with the template's plan into a batch when the template has
  // one and the sink takes batches (DecodePlannedSet), else one by one (DecodeRecord).
  void DecodeDataSet(const MessageContext& ctx, uint16_t set_id, const uint8_t* body, size_t n,
                     uint64_t offset);
  // The general path for the record at *p: read (ReadDataRecord), then either kept as options
  // (ApplyOptionsRecord) or resolved (ResolveTimes), checked, completed and delivered. Returns
  // false when the record cannot be framed (nor, then, the rest of its set).
  bool DecodeRecord(const MessageContext& ctx, const Template& t, uint16_t tid, DomainState* domain,
                    const uint8_t** p, const uint8_t* end, uint64_t rec_offset);
  // The column path: runs of plain records read by ReadPlannedRecords into `batch` and delivered
  // in one OnBatch; a record it stops at goes through DecodeRecord, which describes the problem
  // exactly as without a plan.
  void DecodePlannedSet(const MessageContext& ctx, const Template& t, uint16_t tid,
                        DomainState* domain, const uint8_t* body, size_t n, uint64_t offset);
  void DeliverBatch();
  // The flow of a resolved record, or nullopt (counted and described) when it lacks a required
  // field or ends before it starts.
  std::optional<FlowRecord> CheckRecord(const RawRecord& raw, uint16_t tid, uint64_t rec_offset);
  // The record's observation point: its own point-name field (NULs trimmed), else the exporter's.
  PointId ResolvePoint(const RawRecord& raw, const ExporterState& exporter);
};

ExportDecoder::ExportDecoder(std::string name, FlowSink* sink, PointTable* points, Stats* stats,
                             int problem_log_cap, TemplateLimits limits)
    : impl_(std::make_unique<Impl>()) {
  impl_->templates = TemplateCache(limits);
  impl_->name = std::move(name);
  impl_->sink = sink;
  impl_->batch_sink = sink != nullptr ? BatchSideOf(sink) : nullptr;
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

void ExportDecoder::SetClock(int64_t now_ns) { impl_->now_ns = now_ns; }

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
    impl_->StartMessage();
    impl_->DecodeIpfix(msg.data(), msg.size(), ctx);
    impl_->FollowSequence(ctx, LoadBe32(msg.data() + 8), impl_->message_data_records,
                          impl_->message_options_records, Stat::ipfix_records_lost);
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
    impl_->StartMessage();
    impl_->DecodeV9(msg.data(), msg.size(), ctx);
    impl_->FollowSequence(ctx, LoadBe32(msg.data() + 12), 1, 0, Stat::netflow_v9_packets_lost);
  } else {
    impl_->Problem(Stat::ipfix_bad_message, offset, "IPFIX version 10 or NetFlow version 9",
                   version);
  }
}

void ExportDecoder::LearnTemplates(std::span<const uint8_t> msg, uint32_t exporter) {
  if (msg.size() < kIpfixHeaderBytes || LoadBe16(msg.data()) != 10) return;
  if (impl_->exporters.empty()) AddExporter(IpAddr(), 0, "");
  MessageContext ctx;
  ctx.exporter = exporter < impl_->exporters.size() ? exporter : 0;
  ctx.domain = LoadBe32(msg.data() + 12);
  impl_->silent = true;
  size_t p = kIpfixHeaderBytes;
  while (msg.size() - p >= 4) {  // framed as DecodeIpfix frames it; a bad set ends the message
    const uint16_t set_id = LoadBe16(msg.data() + p);
    const size_t set_len = LoadBe16(msg.data() + p + 2);
    if (set_len < 4 || set_len > msg.size() - p) break;
    if (set_id == 2 || set_id == 3) {
      impl_->DecodeTemplateSet(msg.data() + p + 4, set_len - 4, ctx, set_id == 3, 0);
    }
    p += set_len;
  }
  impl_->silent = false;
}

void ExportDecoder::DeferToEarlierRun() { impl_->deferred = true; }

size_t ExportDecoder::SmallestTemplateRecordBytes() const { return impl_->smallest_record_bytes; }

void ExportDecoder::TakeOverFrom(ExportDecoder* later) {
  Impl& own = *impl_;
  Impl& run = *later->impl_;
  for (const std::string& line : run.kept_problems) {
    if (++own.problems <= static_cast<uint64_t>(own.log_cap)) std::fputs(line.c_str(), stderr);
  }
  own.problems += run.problems - run.kept_problems.size();
  for (const Impl::SequenceObservation& o : run.kept_sequences) own.ObserveSequence(o);
  records_ += later->records_;
  messages_ += later->messages_;
  run.kept_problems.clear();
  run.kept_sequences.clear();
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
      message_uncountable = true;
      Problem(Stat::ipfix_bad_set, set_offset, "a 4-byte set header",
              fmt::format("{} bytes left in the message", len - p));
      return;
    }
    uint16_t set_id = LoadBe16(msg + p);
    size_t set_len = LoadBe16(msg + p + 2);
    if (set_len < 4 || set_len > len - p) {
      message_uncountable = true;
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
      message_uncountable = true;
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
  smallest_record_bytes = std::min(smallest_record_bytes, t.min_record_bytes);
  t.plan = CompileDecodePlan(t, ctx.version);  // once per template, not per data set
  const IpAddr& addr = exporters[ctx.exporter].addr;
  size_t expired = 0;
  const TemplateCache::StoreResult stored = templates.Store(
      TemplateKey{ctx.exporter, ctx.domain, tid, ctx.version}, TemplateSource{addr, ctx.domain},
      std::move(t), now_ns, &expired);
  if (expired > 0) Count(Stat::ipfix_template_expired, expired);
  const TemplateLimits& limits = templates.limits();
  switch (stored) {
    case TemplateCache::StoreResult::kAdded:
    case TemplateCache::StoreResult::kReplaced: break;
    case TemplateCache::StoreResult::kSourceQuota:
      Problem(Stat::ipfix_template_quota, offset,
              fmt::format("at most {} templates from exporter {} domain {}",
                          limits.max_templates_per_source, addr.ToString(), ctx.domain),
              fmt::format("template {} beyond them", tid));
      break;
    case TemplateCache::StoreResult::kExporterQuota:
      Problem(Stat::ipfix_template_quota, offset,
              fmt::format("at most {} templates from exporter {}",
                          limits.max_templates_per_exporter, addr.ToString()),
              fmt::format("template {} of domain {} beyond them", tid, ctx.domain));
      break;
    case TemplateCache::StoreResult::kFull: Count(Stat::ipfix_template_limit); break;
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
      if (ipfix && count == 0 && tid == (options ? 3 : 2)) {
        // RFC 7011 §8.1: the set's own id withdraws all (options) templates of the domain.
        Count(Stat::ipfix_template_withdrawn,
              templates.WithdrawAll(ctx.exporter, ctx.domain, ctx.version, options));
        continue;
      }
      Problem(Stat::ipfix_bad_template, rec_offset, "a template id >= 256", tid);
      return;  // the rest of the set cannot be framed
    }
    if (count == 0) {  // withdrawal of one template
      Count(Stat::ipfix_template_withdrawn,
            templates.Withdraw(TemplateKey{ctx.exporter, ctx.domain, tid, ctx.version}));
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
      // IPFIX scope fields are IEs too (selectorId). A v9 length of 0xFFFF is a fixed length
      // (v9 has no variable length), read as such by ReadDataRecord.
      t.fields.push_back({ClassifyField(pen, id, flen), flen});
      t.min_record_bytes += flen == kVariableLength ? 1 : flen;
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
      const FieldAction action =
          i < scope_len / 4 ? FieldAction::kSkip : ClassifyField(0, id, flen);
      t.fields.push_back({action, flen});
      t.min_record_bytes += flen;
    }
    StoreTemplate(ctx, tid, std::move(t), rec_offset);
  }
}

void ExportDecoder::Impl::DecodeDataSet(const MessageContext& ctx, uint16_t tid,
                                        const uint8_t* body, size_t n, uint64_t offset) {
  bool expired = false;
  const Template* found =
      templates.Find(TemplateKey{ctx.exporter, ctx.domain, tid, ctx.version}, now_ns, &expired);
  if (expired) Count(Stat::ipfix_template_expired);
  if (found == nullptr) {
    message_uncountable = true;
    Problem(Stat::ipfix_unknown_template, offset - 4,
            fmt::format("a template for data set id {} in domain {}", tid, ctx.domain),
            expired ? "an expired one (not refreshed in time)" : "none seen before it");
    return;
  }
  const Template& t = *found;
  DomainState* domain = Domain(ctx.exporter, ctx.domain);
  if (t.plan.usable && batch_sink != nullptr) {
    DecodePlannedSet(ctx, t, tid, domain, body, n, offset);
    return;
  }
  const uint8_t* p = body;
  const uint8_t* end = body + n;
  while (static_cast<size_t>(end - p) >= t.min_record_bytes) {  // fewer bytes are padding
    if (!DecodeRecord(ctx, t, tid, domain, &p, end, offset + static_cast<uint64_t>(p - body))) {
      return;
    }
  }
}

bool ExportDecoder::Impl::DecodeRecord(const MessageContext& ctx, const Template& t, uint16_t tid,
                                       DomainState* domain, const uint8_t** p, const uint8_t* end,
                                       uint64_t rec_offset) {
  const uint8_t* rec_start = *p;
  RawRecord raw;
  if (!ReadDataRecord(t, ctx.version == 10, p, end, &raw)) {
    message_uncountable = true;
    Problem(Stat::ipfix_bad_record, rec_offset,
            fmt::format("a record of template {} within its set", tid),
            fmt::format("{} bytes left", end - rec_start));
    return false;  // the rest of the set cannot be framed
  }
  if (t.options) {
    ++message_options_records;
    Count(Stat::ipfix_options_record);
    if (domain != nullptr) ApplyOptionsRecord(raw, domain);
    return true;
  }
  ++message_data_records;
  ResolveTimes(MessageTimes{ctx.version, ctx.export_s, ctx.sys_uptime_ms}, domain, &raw);
  if (std::optional<FlowRecord> r = CheckRecord(raw, tid, rec_offset)) {
    r->sampling_rate = ResolveSampling(raw, domain);
    r->point = ResolvePoint(raw, exporters[ctx.exporter]);
    ++*records;
    Count(Stat::records_read);
    sink->OnRecord(*r);
  }
  return true;
}

void ExportDecoder::Impl::DecodePlannedSet(const MessageContext& ctx, const Template& t,
                                           uint16_t tid, DomainState* domain, const uint8_t* body,
                                           size_t n, uint64_t offset) {
  const PlannedSetContext set{t.min_record_bytes,
                              domain != nullptr ? domain->default_sampling : 0,
                              exporters[ctx.exporter].default_point};
  auto intern = [this](std::string_view name) { return InternPoint(name); };
  const uint8_t* p = body;
  const uint8_t* end = body + n;
  for (;;) {
    const bool done = ReadPlannedRecords(t.plan, set, &p, end, intern, &batch);
    message_data_records += static_cast<uint32_t>(batch.size);
    DeliverBatch();  // before the general path delivers anything: records stay in order
    if (done) return;
    if (!DecodeRecord(ctx, t, tid, domain, &p, end, offset + static_cast<uint64_t>(p - body))) {
      return;
    }
    if (static_cast<size_t>(end - p) < t.min_record_bytes) return;
  }
}

void ExportDecoder::Impl::DeliverBatch() {
  if (batch.size == 0) return;
  *records += batch.size;
  Count(Stat::records_read, batch.size);
  batch_sink->OnBatch(&batch);
  batch.size = 0;
}

std::optional<FlowRecord> ExportDecoder::Impl::CheckRecord(const RawRecord& raw, uint16_t tid,
                                                           uint64_t rec_offset) {
  if ((raw.have & kHaveRequired) != kHaveRequired) {
    Problem(Stat::ipfix_bad_record, rec_offset,
            fmt::format("source and destination address, start and end time and octet "
                        "count in template {}",
                        tid),
            "a record without some of them");
    return std::nullopt;
  }
  if (raw.flow.end_ns < raw.flow.start_ns) {
    Problem(Stat::ipfix_bad_record, rec_offset, "flow end >= flow start",
            fmt::format("end {} ns < start {} ns", raw.flow.end_ns, raw.flow.start_ns));
    return std::nullopt;
  }
  return raw.flow;
}

PointId ExportDecoder::Impl::ResolvePoint(const RawRecord& raw, const ExporterState& exporter) {
  if (!raw.has_point_field) return exporter.default_point;
  std::string_view name = raw.point_name;
  while (!name.empty() && name.back() == '\0') name.remove_suffix(1);
  return name.empty() ? exporter.default_point : InternPoint(name);
}

}  // namespace prism::ingest
