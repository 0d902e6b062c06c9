// File: ingest/ipfix/data_record.h
// One data record of an IPFIX / NetFlow v9 data set, in two stages (as goflow2 separates decoding
// a record from producing a flow from it):
//   1. ReadDataRecord: the template's fields, read as they are into a RawRecord — addresses,
//      counts, ports and absolute times straight into the FlowRecord; times relative to the
//      export time or to the exporter's boot, sampling parameters, the sampler id and the point
//      name kept aside, since they need context;
//   2. ResolveTimes and ResolveSampling: those values against the message header (MessageTimes)
//      and what the exporter's options records said (DomainState).
// Options records do not become flows: ApplyOptionsRecord keeps what they say in the DomainState.
// ExportDecoder::Impl::DecodeDataSet (export_decoder.cc) runs these per record; each is a plain
// function of its inputs, tested alone in data_record_test.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "core/flow_record.h"
#include "ingest/ipfix/ipfix_template.h"

namespace prism::ingest {

// RawRecord::have bits: which of the fields a flow needs the record had.
inline constexpr uint32_t kHaveSrc = 1, kHaveDst = 2, kHaveStart = 4, kHaveEnd = 8, kHaveBytes = 16;
inline constexpr uint32_t kHaveRequired = kHaveSrc | kHaveDst | kHaveStart | kHaveEnd | kHaveBytes;

// The fields of one data record, before anything is resolved. -1 / 0 / false: field absent.
struct RawRecord {
  FlowRecord flow;              // src, dst, ports, proto, qp, bytes, packets, absolute start / end
  uint32_t have = 0;            // kHave* bits of the flow fields read
  std::string_view point_name;  // points into the message; NULs not yet trimmed
  bool has_point_field = false;
  uint32_t sampling = 0;             // 34 / 50 / 305: 1-in-N
  uint32_t sampling_size = 0;        // 309
  uint32_t sampling_population = 0;  // 310
  bool has_sampler = false;
  uint64_t sampler = 0;          // 48 / 302
  int64_t uptime_start_ms = -1;  // 22: ms since the exporter's boot
  int64_t uptime_end_ms = -1;    // 21
  int64_t delta_start_us = -1;   // 158: µs before the export time
  int64_t delta_end_us = -1;     // 159
  int64_t system_init_ms = -1;   // 160: the exporter's boot, Unix ms
};

// Reads one record of template `t` from *p (at most up to `end`) and advances *p past it.
// Variable-length fields exist only in IPFIX (`ipfix`). Returns false when a field does not fit
// before `end`: the record, and the rest of its set, cannot be framed.
bool ReadDataRecord(const Template& t, bool ipfix, const uint8_t** p, const uint8_t* end,
                    RawRecord* out);

// What options records told the decoder about one (exporter, observation domain / source id).
inline constexpr size_t kMaxSamplersPerDomain = 1024;
struct DomainState {
  uint32_t default_sampling = 0;                    // 0 = unknown
  std::unordered_map<uint64_t, uint32_t> samplers;  // sampler / selector id -> 1-in-N
  int64_t system_init_ms = -1;                      // IPFIX systemInitTimeMilliseconds; -1 unknown
};

// The sampling interval the record states itself: 34 / 50 / 305, else population / size
// (309 / 310) when both are given and population >= size; 0 = none.
uint32_t StatedSampling(const RawRecord& raw);

// An options record: its system init time and its sampling interval (for its sampler id, or as
// the domain's default) go into `domain` (at most kMaxSamplersPerDomain sampler ids).
void ApplyOptionsRecord(const RawRecord& raw, DomainState* domain);

// The header fields relative timestamps are resolved against.
struct MessageTimes {
  uint8_t version = 10;        // 10 IPFIX, 9 NetFlow v9
  uint32_t export_s = 0;       // IPFIX export time / v9 unix_secs
  uint32_t sys_uptime_ms = 0;  // v9 only
};

// Fills raw->flow.start_ns / end_ns, where the record had no absolute time, from its relative
// times: NetFlow v9 uptimes against the header's sysUptime (one 32-bit ms clock, which may wrap
// between them); IPFIX uptimes against the exporter's boot (the record's systemInitTime, else the
// domain's; `domain` may be null); µs deltas before the export time. Sets the have bits.
void ResolveTimes(const MessageTimes& m, const DomainState* domain, RawRecord* raw);

// The record's sampling: stated, else its sampler's (from options records), else the domain's
// default, else 1 (unsampled). `domain` may be null.
uint32_t ResolveSampling(const RawRecord& raw, const DomainState* domain);

}  // namespace prism::ingest
