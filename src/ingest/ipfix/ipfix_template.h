// File: ingest/ipfix/ipfix_template.h
// An IPFIX / NetFlow v9 (options) template as the export decoder keeps it: per field, what the
// field means to llmprism (FieldAction, resolved once when the template arrives) and its length.
// The export decoder (export_decoder.h) parses template sets into these, keeps them in its
// TemplateCache (template_cache.h) and reads data records with them (data_record.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ingest/ipfix/decode_plan.h"

namespace prism::ingest {

inline constexpr uint32_t kPrismEnterpriseNumber = 32473;  // see io/ipfix_file.h
inline constexpr uint16_t kPrismIeRoceDestQp = 1;
inline constexpr uint16_t kPrismIeObservationPoint = 2;
// A field length of 0xFFFF: variable length (IPFIX, RFC 7011 §7). NetFlow v9 has no variable
// length; there 0xFFFF is a fixed length (which no record of a datagram can fit).
inline constexpr uint16_t kVariableLength = 0xFFFF;

// clang-format off
enum class FieldAction : uint8_t {
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
// clang-format on

struct TemplateField {
  FieldAction action = FieldAction::kSkip;
  uint16_t len = 0;  // kVariableLength: variable (IPFIX only)
};

struct Template {
  std::vector<TemplateField> fields;
  size_t min_record_bytes = 0;  // a variable-length field counts 1 byte
  bool options = false;         // an options template: its records are metadata, not flows
  DecodePlan plan;              // compiled when the decoder stores it (decode_plan.h)
};

// What information element `id` of enterprise `enterprise` (0 = IANA) with length `len` means to
// the decoder. Elements it does not use, and used elements of a length it cannot read, are
// kSkip: skipped by length.
FieldAction ClassifyField(uint32_t enterprise, uint16_t id, uint16_t len);

}  // namespace prism::ingest
