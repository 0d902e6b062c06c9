#include "ingest/sflow/sflow_format.h"

#include <algorithm>

#include <fmt/format.h>

#include "ingest/sflow/xdr_reader.h"

namespace prism::ingest {
namespace {

bool Fail(SflowProblem* problem, size_t offset, std::string expected) {
  if (problem != nullptr) *problem = {offset, std::move(expected)};
  return false;
}

// Reads `count` then that many (type, length, body) elements; the bodies must fit in `r`.
bool ReadElements(XdrReader* r, uint32_t max_count, const char* what,
                  std::vector<SflowElement>* out, SflowProblem* problem) {
  const size_t count_at = r->offset();
  uint32_t count = 0;
  if (!r->U32(&count)) {
    return Fail(problem, count_at, fmt::format("expected the number of {}s, got the end", what));
  }
  // Each element takes at least 8 bytes: a count beyond that is a lie, not a big datagram.
  if (count > max_count || count > r->remaining() / 8) {
    return Fail(problem, count_at,
                fmt::format("expected at most {} {}s in {} bytes, got a count of {}",
                            std::min<size_t>(max_count, r->remaining() / 8), what,
                            r->remaining(), count));
  }
  out->clear();
  out->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = r->offset();
    uint32_t type = 0, length = 0;
    if (!r->U32(&type) || !r->U32(&length)) {
      return Fail(problem, at,
                  fmt::format("expected {} {} of {} (type and length), got the end", what, i + 1,
                              count));
    }
    SflowElement e;
    e.type = type;
    e.offset = r->offset();
    if (length % 4 != 0 || !r->Opaque(length, &e.body)) {
      return Fail(problem, e.offset,
                  fmt::format("expected {} {} of {}: {} bytes (a multiple of 4) within the {} "
                              "left",
                              what, i + 1, count, length, r->remaining()));
    }
    out->push_back(e);
  }
  return true;
}

bool ReadAddress(XdrReader* r, IpAddr* out, SflowProblem* problem) {
  const size_t at = r->offset();
  uint32_t type = 0;
  if (!r->U32(&type)) return Fail(problem, at, "expected an agent address type, got the end");
  std::span<const uint8_t> bytes;
  switch (type) {
    case 0: *out = IpAddr(); return true;
    case 1:
      if (!r->Opaque(4, &bytes)) return Fail(problem, at + 4, "expected a 4-byte IPv4 address");
      *out = IpAddr::FromV4(uint32_t{bytes[0]} << 24 | uint32_t{bytes[1]} << 16 |
                            uint32_t{bytes[2]} << 8 | bytes[3]);
      return true;
    case 2:
      if (!r->Opaque(16, &bytes)) return Fail(problem, at + 4, "expected a 16-byte IPv6 address");
      *out = IpAddr::FromV6(bytes.data());
      return true;
    default:
      return Fail(problem, at,
                  fmt::format("expected agent address type 0, 1 (IPv4) or 2 (IPv6), got {}",
                              type));
  }
}

}  // namespace

bool ParseSflowDatagram(std::span<const uint8_t> data, SflowDatagram* out, SflowProblem* problem) {
  XdrReader r(data);
  uint32_t version = 0;
  if (!r.U32(&version)) {
    return Fail(problem, 0, fmt::format("expected a 28-byte sFlow header, got {} bytes",
                                        data.size()));
  }
  if (version != kSflowVersion) {
    return Fail(problem, 0, fmt::format("expected sFlow version 5, got {}", version));
  }
  if (!ReadAddress(&r, &out->agent, problem)) return false;
  const size_t at = r.offset();
  if (!r.U32(&out->sub_agent) || !r.U32(&out->sequence) || !r.U32(&out->uptime_ms)) {
    return Fail(problem, at, "expected sub-agent id, sequence number and uptime, got the end");
  }
  if (!ReadElements(&r, kSflowMaxSamples, "sample", &out->samples, problem)) return false;
  if (r.remaining() != 0) {
    return Fail(problem, r.offset(),
                fmt::format("expected the datagram to end after its samples, got {} more bytes",
                            r.remaining()));
  }
  return true;
}

bool ParseFlowSample(const SflowElement& sample, SflowFlowSample* out, SflowProblem* problem) {
  XdrReader r(sample.body, sample.offset);
  out->expanded = sample.type == kSflowExpandedFlowSample;
  bool ok = r.U32(&out->sequence);
  if (out->expanded) {
    uint32_t input_format = 0, output_format = 0;
    ok = ok && r.U32(&out->source_type) && r.U32(&out->source_index) &&
         r.U32(&out->sampling_rate) && r.U32(&out->sample_pool) && r.U32(&out->drops) &&
         r.U32(&input_format) && r.U32(&out->input) && r.U32(&output_format) &&
         r.U32(&out->output);
  } else {
    uint32_t source = 0;
    ok = ok && r.U32(&source) && r.U32(&out->sampling_rate) && r.U32(&out->sample_pool) &&
         r.U32(&out->drops) && r.U32(&out->input) && r.U32(&out->output);
    out->source_type = source >> 24;
    out->source_index = source & 0xFFFFFF;
  }
  if (!ok) {
    return Fail(problem, r.offset(),
                fmt::format("expected the {} fields of a{} flow sample, got {} bytes",
                            out->expanded ? 11 : 8, out->expanded ? "n expanded" : "",
                            sample.body.size()));
  }
  if (out->sampling_rate == 0) {
    return Fail(problem, sample.offset + (out->expanded ? 12 : 8),
                "expected a sampling rate >= 1, got 0");
  }
  if (!ReadElements(&r, kSflowMaxRecords, "flow record", &out->records, problem)) return false;
  if (r.remaining() != 0) {
    return Fail(problem, r.offset(),
                fmt::format("expected the flow sample to end after its records, got {} more "
                            "bytes",
                            r.remaining()));
  }
  return true;
}

bool ParseCounterSample(const SflowElement& sample, SflowCounterSample* out,
                        SflowProblem* problem) {
  XdrReader r(sample.body, sample.offset);
  out->expanded = sample.type == kSflowExpandedCounterSample;
  bool ok = r.U32(&out->sequence);
  if (out->expanded) {
    ok = ok && r.U32(&out->source_type) && r.U32(&out->source_index);
  } else {
    uint32_t source = 0;
    ok = ok && r.U32(&source);
    out->source_type = source >> 24;
    out->source_index = source & 0xFFFFFF;
  }
  if (!ok) {
    return Fail(problem, r.offset(),
                fmt::format("expected a counter sample's sequence number and source, got {} "
                            "bytes",
                            sample.body.size()));
  }
  if (!ReadElements(&r, kSflowMaxRecords, "counter record", &out->records, problem)) {
    return false;
  }
  if (r.remaining() != 0) {
    return Fail(problem, r.offset(),
                fmt::format("expected the counter sample to end after its records, got {} more "
                            "bytes",
                            r.remaining()));
  }
  return true;
}

bool ParseRawHeader(const SflowElement& record, SflowRawHeader* out, SflowProblem* problem) {
  XdrReader r(record.body, record.offset);
  uint32_t length = 0;
  if (!r.U32(&out->protocol) || !r.U32(&out->frame_length) || !r.U32(&out->stripped) ||
      !r.U32(&length)) {
    return Fail(problem, r.offset(),
                fmt::format("expected a raw packet header record's 16-byte start, got {} bytes",
                            record.body.size()));
  }
  const size_t at = r.offset();
  if (!r.Opaque(length, &out->header) || r.remaining() != 0) {
    return Fail(problem, at,
                fmt::format("expected {} header bytes (padded to 4) filling the record, got {}",
                            length, record.body.size() - 16));
  }
  return true;
}

bool ParseInterfaceCounters(const SflowElement& record, SflowInterfaceCounters* out,
                            SflowProblem* problem) {
  if (record.body.size() != kSflowGenericIfCountersBytes) {
    return Fail(problem, record.offset,
                fmt::format("expected {} bytes of generic interface counters, got {}",
                            kSflowGenericIfCountersBytes, record.body.size()));
  }
  XdrReader r(record.body, record.offset);
  SflowInterfaceCounters& c = *out;
  // The size was checked: every read below succeeds.
  r.U32(&c.if_index);
  r.U32(&c.if_type);
  r.U64(&c.if_speed);
  r.U32(&c.if_direction);
  r.U32(&c.if_status);
  r.U64(&c.in_octets);
  r.U32(&c.in_ucast_pkts);
  r.U32(&c.in_multicast_pkts);
  r.U32(&c.in_broadcast_pkts);
  r.U32(&c.in_discards);
  r.U32(&c.in_errors);
  r.U32(&c.in_unknown_protos);
  r.U64(&c.out_octets);
  r.U32(&c.out_ucast_pkts);
  r.U32(&c.out_multicast_pkts);
  r.U32(&c.out_broadcast_pkts);
  r.U32(&c.out_discards);
  r.U32(&c.out_errors);
  r.U32(&c.promiscuous_mode);
  return true;
}

bool LooksLikeSflowDatagram(std::span<const uint8_t> payload, size_t udp_payload_bytes) {
  if (payload.size() != udp_payload_bytes || payload.size() < 28) return false;
  XdrReader r(payload);
  uint32_t version = 0, type = 0;
  r.U32(&version);
  r.U32(&type);
  if (version != kSflowVersion || (type != 1 && type != 2)) return false;
  const size_t header_bytes = type == 1 ? 28 : 40;
  if (payload.size() < header_bytes) return false;
  XdrReader count(payload.subspan(header_bytes - 4));
  uint32_t samples = 0;
  count.U32(&samples);
  return samples <= kSflowMaxSamples && samples <= count.remaining() / 8;
}

}  // namespace prism::ingest
