// File: ingest/ipfix/planned_records.h
// The tight loop of the export decoder's column path: the records of one data set read with a
// DecodePlan (decode_plan.h) straight into a RecordBatch (core/record_batch.h) — only the fields
// the FlowTable keeps, at offsets worked out when the template was learnt, no FlowRecord, no
// per-field dispatch. It gives each field exactly the value the general path (data_record.h,
// ExportDecoder's CheckRecord / ResolveSampling / ResolvePoint) would, and stops at the first
// record that path would describe as a problem, so the decoder can hand that record to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/big_endian.h"
#include "core/ntp_time.h"
#include "core/record_batch.h"
#include "ingest/ipfix/decode_plan.h"

namespace prism::ingest {

// What the records of one data set share.
struct PlannedSetContext {
  size_t min_record_bytes = 1;   // the template's; fewer bytes left are padding
  uint32_t domain_sampling = 0;  // the domain's default from options records; 0 = none
  PointId exporter_point = kNoPoint;
};

namespace planned_internal {

inline constexpr int64_t kNsPerSecond = 1'000'000'000;
inline constexpr int64_t kNsPerMs = 1'000'000;

// false: milliseconds past what ns can hold (the general path then lacks the time).
inline bool ReadTime(const uint8_t* p, PlannedTime form, int64_t* ns) {
  switch (form) {
    case PlannedTime::kSeconds: *ns = int64_t{LoadBe32(p)} * kNsPerSecond; return true;
    case PlannedTime::kNtp: *ns = NtpToUnixNs(LoadBe64(p)); return true;
    case PlannedTime::kMilliseconds: {
      const uint64_t ms = LoadBe64(p);
      if (ms > static_cast<uint64_t>(INT64_MAX / kNsPerMs)) return false;
      *ns = static_cast<int64_t>(ms) * kNsPerMs;
      return true;
    }
  }
  return false;
}

inline uint64_t ReadUint(const uint8_t* p, uint16_t len) {
  if (len == 8) return LoadBe64(p);
  if (len == 4) return LoadBe32(p);
  return LoadBeUint(p, len);
}

inline IpAddr ReadAddr(const uint8_t* p, uint16_t len) {
  return len == 4 ? IpAddr::FromV4(LoadBe32(p)) : IpAddr::FromV6(p);
}

// The trailing variable-length field at `v` (RFC 7011 §7: one length byte, or 255 and two): its
// value and the record's end. false when it does not fit before `end`.
inline bool ReadTrailing(const uint8_t* v, const uint8_t* end, std::string_view* value,
                         const uint8_t** record_end) {
  size_t len = *v++;  // the caller left at least one byte
  if (len == 255) {
    if (end - v < 2) return false;
    len = LoadBe16(v);
    v += 2;
  }
  if (static_cast<size_t>(end - v) < len) return false;
  *value = std::string_view(reinterpret_cast<const char*>(v), len);
  *record_end = v + len;
  return true;
}

}  // namespace planned_internal

// Reads records of `plan` from *p into `out` (appended after its rows) until fewer than
// ctx.min_record_bytes are left (returns true) or a record the general path must read is next:
// a millisecond time past what ns hold, an end before the start, a variable length that does not
// fit (returns false, *p at that record). `intern_point(std::string_view)` gives a point name's
// id. Every record read is a flow: the caller counts them.
template <typename InternPoint>
bool ReadPlannedRecords(const DecodePlan& plan, const PlannedSetContext& ctx, const uint8_t** pos,
                        const uint8_t* end, InternPoint&& intern_point, RecordBatch* out) {
  using namespace planned_internal;  // NOLINT
  const uint8_t* p = *pos;
  out->Reserve(out->size + static_cast<size_t>(end - p) / ctx.min_record_bytes + 1);
  while (static_cast<size_t>(end - p) >= ctx.min_record_bytes) {
    // No point field and an empty (or all-NUL) one both mean the exporter's point.
    std::string_view name;
    const uint8_t* next = p + plan.fixed_bytes;
    if (plan.point.len != 0) {
      name = std::string_view(reinterpret_cast<const char*>(p + plan.point.offset), plan.point.len);
    }
    if (plan.trailing_variable) {
      std::string_view value;
      if (!ReadTrailing(next, end, &value, &next)) break;
      if (plan.trailing_is_point) name = value;
    }
    int64_t start_ns, end_ns;
    if (!ReadTime(p + plan.start.offset, plan.start_form, &start_ns) ||
        !ReadTime(p + plan.end.offset, plan.end_form, &end_ns) || end_ns < start_ns) {
      break;
    }
    const size_t i = out->size++;
    out->start_ns[i] = start_ns;
    out->end_ns[i] = end_ns;
    out->src[i] = ReadAddr(p + plan.src.offset, plan.src.len);
    out->dst[i] = ReadAddr(p + plan.dst.offset, plan.dst.len);
    out->bytes[i] = ReadUint(p + plan.bytes.offset, plan.bytes.len);
    out->qp[i] = plan.qp.len == 0 ? 0 : static_cast<uint32_t>(ReadUint(p + plan.qp.offset, plan.qp.len));
    uint32_t sampling = plan.sampling.len == 0
                            ? 0
                            : static_cast<uint32_t>(ReadUint(p + plan.sampling.offset, plan.sampling.len));
    if (sampling == 0) sampling = ctx.domain_sampling;
    out->sampling_rate[i] = sampling == 0 ? 1 : sampling;
    while (!name.empty() && name.back() == '\0') name.remove_suffix(1);
    out->point[i] = name.empty() ? ctx.exporter_point : intern_point(name);
    p = next;
  }
  *pos = p;
  return static_cast<size_t>(end - p) < ctx.min_record_bytes;
}

}  // namespace prism::ingest
