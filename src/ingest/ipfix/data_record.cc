#include "ingest/ipfix/data_record.h"

#include "core/big_endian.h"
#include "core/ntp_time.h"

namespace prism::ingest {
namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;
constexpr int64_t kNsPerMs = 1'000'000;

// `*field` = `value`, and the record has the flow field `bit`.
template <typename T>
void Have(T* field, T value, uint32_t bit, RawRecord* out) {
  *field = value;
  out->have |= bit;
}

// Milliseconds past what ns can hold are left unset: the record then lacks that time.
void StoreMs(uint64_t ms, int64_t* field, uint32_t bit, RawRecord* out) {
  if (ms <= static_cast<uint64_t>(INT64_MAX / kNsPerMs)) {
    Have(field, static_cast<int64_t>(ms) * kNsPerMs, bit, out);
  }
}

void StoreSampler(uint64_t id, RawRecord* out) {
  out->sampler = id;
  out->has_sampler = true;
}

void StorePointName(const uint8_t* p, size_t len, RawRecord* out) {
  out->point_name = std::string_view(reinterpret_cast<const char*>(p), len);
  out->has_point_field = true;
}

// Stores the value of one field of `len` bytes at `p`. Later fields of the same meaning
// overwrite earlier ones, as a template may list an element twice.
void StoreField(FieldAction action, const uint8_t* p, size_t len, RawRecord* out) {
  FlowRecord& r = out->flow;
  const auto uint = [&] { return LoadBeUint(p, len); };
  using A = FieldAction;
  switch (action) {
    case A::kSkip: break;
    case A::kSrcV4: Have(&r.src, IpAddr::FromV4(LoadBe32(p)), kHaveSrc, out); break;
    case A::kDstV4: Have(&r.dst, IpAddr::FromV4(LoadBe32(p)), kHaveDst, out); break;
    case A::kSrcV6: Have(&r.src, IpAddr::FromV6(p), kHaveSrc, out); break;
    case A::kDstV6: Have(&r.dst, IpAddr::FromV6(p), kHaveDst, out); break;
    case A::kStartS: Have(&r.start_ns, int64_t{LoadBe32(p)} * kNsPerSecond, kHaveStart, out); break;
    case A::kEndS: Have(&r.end_ns, int64_t{LoadBe32(p)} * kNsPerSecond, kHaveEnd, out); break;
    case A::kStartMs: StoreMs(LoadBe64(p), &r.start_ns, kHaveStart, out); break;
    case A::kEndMs: StoreMs(LoadBe64(p), &r.end_ns, kHaveEnd, out); break;
    case A::kStartNtp: Have(&r.start_ns, NtpToUnixNs(LoadBe64(p)), kHaveStart, out); break;
    case A::kEndNtp: Have(&r.end_ns, NtpToUnixNs(LoadBe64(p)), kHaveEnd, out); break;
    case A::kStartUptimeMs: out->uptime_start_ms = static_cast<int64_t>(uint()); break;
    case A::kEndUptimeMs: out->uptime_end_ms = static_cast<int64_t>(uint()); break;
    case A::kStartDeltaUs: out->delta_start_us = static_cast<int64_t>(uint()); break;
    case A::kEndDeltaUs: out->delta_end_us = static_cast<int64_t>(uint()); break;
    case A::kSystemInitMs: {
      // Half the ns range: uptimes are added to it.
      const uint64_t ms = LoadBe64(p);
      if (ms <= static_cast<uint64_t>(INT64_MAX / kNsPerMs / 2)) {
        out->system_init_ms = static_cast<int64_t>(ms);
      }
      break;
    }
    case A::kBytes: Have(&r.bytes, uint(), kHaveBytes, out); break;
    case A::kPackets: r.packets = uint(); break;
    case A::kSrcPort: r.src_port = static_cast<uint16_t>(uint()); break;
    case A::kDstPort: r.dst_port = static_cast<uint16_t>(uint()); break;
    case A::kProto: r.proto = *p; break;
    case A::kSampling: out->sampling = static_cast<uint32_t>(uint()); break;
    case A::kSamplingSize: out->sampling_size = static_cast<uint32_t>(uint()); break;
    case A::kSamplingPopulation: out->sampling_population = static_cast<uint32_t>(uint()); break;
    case A::kSamplerId: StoreSampler(uint(), out); break;
    case A::kQp: r.qp = static_cast<uint32_t>(uint()); break;
    case A::kPointName: StorePointName(p, len, out); break;
  }
}

}  // namespace

bool ReadDataRecord(const Template& t, bool ipfix, const uint8_t** pos, const uint8_t* end,
                    RawRecord* out) {
  const uint8_t* p = *pos;
  for (const TemplateField& f : t.fields) {
    size_t len = f.len;
    if (len == kVariableLength && ipfix) {  // RFC 7011 §7: one length byte, or 255 and two
      if (p == end) return false;
      len = *p++;
      if (len == 255) {
        if (end - p < 2) return false;
        len = LoadBe16(p);
        p += 2;
      }
    }
    if (static_cast<size_t>(end - p) < len) return false;
    StoreField(f.action, p, len, out);
    p += len;
  }
  *pos = p;
  return true;
}

uint32_t StatedSampling(const RawRecord& raw) {
  if (raw.sampling == 0 && raw.sampling_size != 0 && raw.sampling_population >= raw.sampling_size) {
    return raw.sampling_population / raw.sampling_size;
  }
  return raw.sampling;
}

void ApplyOptionsRecord(const RawRecord& raw, DomainState* domain) {
  if (raw.system_init_ms >= 0) domain->system_init_ms = raw.system_init_ms;
  const uint32_t sampling = StatedSampling(raw);
  if (sampling == 0) return;
  if (!raw.has_sampler) {
    domain->default_sampling = sampling;
  } else if (domain->samplers.size() < kMaxSamplersPerDomain ||
             domain->samplers.count(raw.sampler) != 0) {
    domain->samplers[raw.sampler] = sampling;
  }
}

void ResolveTimes(const MessageTimes& m, const DomainState* domain, RawRecord* raw) {
  FlowRecord& r = raw->flow;
  auto from_uptime = [&](int64_t uptime_ms, int64_t* out, uint32_t bit) {
    if (uptime_ms < 0) return;
    if (m.version == 9) {
      // sysUptime and the switched times share one 32-bit ms clock; it may wrap between them.
      const int64_t back_ms =
          static_cast<int32_t>(m.sys_uptime_ms - static_cast<uint32_t>(uptime_ms));
      *out = (int64_t{m.export_s} * 1000 - back_ms) * kNsPerMs;
      raw->have |= bit;
      return;
    }
    const int64_t base = raw->system_init_ms >= 0 ? raw->system_init_ms
                         : domain != nullptr      ? domain->system_init_ms
                                                  : -1;
    if (base < 0) return;
    *out = (base + uptime_ms) * kNsPerMs;
    raw->have |= bit;
  };
  if (!(raw->have & kHaveStart)) from_uptime(raw->uptime_start_ms, &r.start_ns, kHaveStart);
  if (!(raw->have & kHaveEnd)) from_uptime(raw->uptime_end_ms, &r.end_ns, kHaveEnd);
  if (!(raw->have & kHaveStart) && raw->delta_start_us >= 0) {
    r.start_ns = int64_t{m.export_s} * kNsPerSecond - raw->delta_start_us * 1000;
    raw->have |= kHaveStart;
  }
  if (!(raw->have & kHaveEnd) && raw->delta_end_us >= 0) {
    r.end_ns = int64_t{m.export_s} * kNsPerSecond - raw->delta_end_us * 1000;
    raw->have |= kHaveEnd;
  }
}

uint32_t ResolveSampling(const RawRecord& raw, const DomainState* domain) {
  uint32_t sampling = StatedSampling(raw);
  if (sampling == 0 && domain != nullptr) {
    if (raw.has_sampler) {
      auto s = domain->samplers.find(raw.sampler);
      if (s != domain->samplers.end()) sampling = s->second;
    }
    if (sampling == 0) sampling = domain->default_sampling;
  }
  return sampling == 0 ? 1 : sampling;
}

}  // namespace prism::ingest
