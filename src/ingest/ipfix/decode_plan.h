// File: ingest/ipfix/decode_plan.h
// A data template compiled, once when it is learnt, into where its records keep the fields the
// FlowTable's columns need (offsets and widths within the record), so the records of a data set
// can be read in a tight loop (planned_records.h) instead of interpreting the template field by
// field (data_record.h) and building a FlowRecord per record. Only the plain layouts are
// planned: fixed-length fields (at most one variable-length field, and only as the last one, as
// llmprism's own writer puts the point name), absolute times, each flow field once, sampling
// stated per record or per domain. Any other template keeps the general path: a plan changes
// how fast records are read, never what is read from them.
#pragma once

#include <cstdint>

namespace prism::ingest {

struct Template;  // ipfix_template.h

// How a planned time field is stored (data_record.cc converts the same way).
enum class PlannedTime : uint8_t { kSeconds, kMilliseconds, kNtp };

// A field of the record: its offset from the record's start and its width in bytes.
struct PlannedField {
  uint16_t offset = 0;
  uint16_t len = 0;  // 0: the template has no such field
};

struct DecodePlan {
  bool usable = false;  // false: records of this template take the general path
  uint32_t fixed_bytes = 0;         // the fixed-length fields, in bytes
  bool trailing_variable = false;   // one variable-length field follows them (IPFIX, RFC 7011 §7)
  bool trailing_is_point = false;   // ... and it is the observation point name
  PlannedField src, dst;            // 4 bytes: IPv4, 16: IPv6
  PlannedField start, end;
  PlannedTime start_form = PlannedTime::kNtp, end_form = PlannedTime::kNtp;
  PlannedField bytes;
  PlannedField qp;        // absent: 0
  PlannedField sampling;  // absent: the domain's default, else 1
  PlannedField point;     // a fixed-length point name field; absent: trailing or the exporter's
};

// The plan of template `t` as records of `version` (10 IPFIX, 9 NetFlow v9) are laid out, or a
// plan with usable = false when `t` is not one of the plain layouts above.
DecodePlan CompileDecodePlan(const Template& t, uint8_t version);

}  // namespace prism::ingest
