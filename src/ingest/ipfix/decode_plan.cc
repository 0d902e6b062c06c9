#include "ingest/ipfix/decode_plan.h"

#include <cstdint>
#include <initializer_list>

#include "ingest/ipfix/ipfix_template.h"

namespace prism::ingest {
namespace {

// Where one fixed-length field of meaning `action` goes in the plan. Returns false for a layout
// the plan cannot reproduce exactly: a field the general path resolves against context (relative
// times, samplers, population / size) or one flow field given twice (the general path keeps the
// last value it could store, which depends on the values).
bool PlanField(FieldAction action, PlannedField at, DecodePlan* plan) {
  using A = FieldAction;
  auto place = [&](PlannedField* field) {
    if (field->len != 0) return false;
    *field = at;
    return true;
  };
  auto place_time = [&](PlannedField* field, PlannedTime* form, PlannedTime f) {
    *form = f;
    return place(field);
  };
  switch (action) {
    case A::kSkip:
    case A::kPackets:
    case A::kSrcPort:
    case A::kDstPort:
    case A::kProto: return true;  // not kept by the columns
    case A::kSrcV4:
    case A::kSrcV6: return place(&plan->src);
    case A::kDstV4:
    case A::kDstV6: return place(&plan->dst);
    case A::kStartS: return place_time(&plan->start, &plan->start_form, PlannedTime::kSeconds);
    case A::kEndS: return place_time(&plan->end, &plan->end_form, PlannedTime::kSeconds);
    case A::kStartMs: return place_time(&plan->start, &plan->start_form, PlannedTime::kMilliseconds);
    case A::kEndMs: return place_time(&plan->end, &plan->end_form, PlannedTime::kMilliseconds);
    case A::kStartNtp: return place_time(&plan->start, &plan->start_form, PlannedTime::kNtp);
    case A::kEndNtp: return place_time(&plan->end, &plan->end_form, PlannedTime::kNtp);
    case A::kBytes: return place(&plan->bytes);
    case A::kQp: return place(&plan->qp);
    case A::kSampling: return place(&plan->sampling);
    case A::kPointName: return place(&plan->point);
    default: return false;  // relative times, system init, sampler id, sampling size/population
  }
}

}  // namespace

DecodePlan CompileDecodePlan(const Template& t, uint8_t version) {
  DecodePlan plan;
  if (t.options) return plan;
  const bool ipfix = version == 10;
  uint32_t offset = 0;
  for (size_t i = 0; i < t.fields.size(); ++i) {
    const TemplateField& f = t.fields[i];
    if (f.len == kVariableLength) {
      // NetFlow v9's 0xFFFF is a fixed length no datagram can fit; IPFIX's is variable, planned
      // only as the last field.
      if (!ipfix || i + 1 != t.fields.size()) return DecodePlan{};
      if (f.action != FieldAction::kSkip && f.action != FieldAction::kPointName) return DecodePlan{};
      if (f.action == FieldAction::kPointName && plan.point.len != 0) return DecodePlan{};
      plan.trailing_variable = true;
      plan.trailing_is_point = f.action == FieldAction::kPointName;
      break;
    }
    if (offset + f.len > UINT16_MAX) return DecodePlan{};  // offsets are 16 bits
    if (!PlanField(f.action, PlannedField{static_cast<uint16_t>(offset), f.len}, &plan)) {
      return DecodePlan{};
    }
    offset += f.len;
  }
  plan.fixed_bytes = offset;
  // The fields every flow needs (CheckRecord's test): without them every record is a problem,
  // which the general path describes.
  for (const PlannedField* need : {&plan.src, &plan.dst, &plan.start, &plan.end, &plan.bytes}) {
    if (need->len == 0) return DecodePlan{};
  }
  plan.usable = plan.fixed_bytes + (plan.trailing_variable ? 1 : 0) == t.min_record_bytes;
  return plan;
}

}  // namespace prism::ingest
