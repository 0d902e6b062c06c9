#include "ingest/ipfix/ipfix_template.h"

namespace prism::ingest {
namespace {

bool IsUint(uint16_t len, uint16_t max) { return len >= 1 && len <= max; }

}  // namespace

FieldAction ClassifyField(uint32_t enterprise, uint16_t id, uint16_t len) {
  using A = FieldAction;
  if (enterprise == kPrismEnterpriseNumber) {
    if (id == kPrismIeRoceDestQp && IsUint(len, 4)) return A::kQp;
    if (id == kPrismIeObservationPoint) return A::kPointName;
    return A::kSkip;
  }
  if (enterprise != 0) return A::kSkip;
  switch (id) {
    case 8: return len == 4 ? A::kSrcV4 : A::kSkip;
    case 12: return len == 4 ? A::kDstV4 : A::kSkip;
    case 27: return len == 16 ? A::kSrcV6 : A::kSkip;
    case 28: return len == 16 ? A::kDstV6 : A::kSkip;
    case 150: return len == 4 ? A::kStartS : A::kSkip;
    case 151: return len == 4 ? A::kEndS : A::kSkip;
    case 152: return len == 8 ? A::kStartMs : A::kSkip;
    case 153: return len == 8 ? A::kEndMs : A::kSkip;
    case 154:
    case 156: return len == 8 ? A::kStartNtp : A::kSkip;
    case 155:
    case 157: return len == 8 ? A::kEndNtp : A::kSkip;
    case 22: return IsUint(len, 4) ? A::kStartUptimeMs : A::kSkip;
    case 21: return IsUint(len, 4) ? A::kEndUptimeMs : A::kSkip;
    case 158: return IsUint(len, 4) ? A::kStartDeltaUs : A::kSkip;
    case 159: return IsUint(len, 4) ? A::kEndDeltaUs : A::kSkip;
    case 160: return len == 8 ? A::kSystemInitMs : A::kSkip;
    case 1:
    case 85:
    case 23:  // octetDeltaCount, octetTotalCount, v9 OUT_BYTES
      return IsUint(len, 8) ? A::kBytes : A::kSkip;
    case 2:
    case 86:
    case 24:  // packetDeltaCount, packetTotalCount, v9 OUT_PKTS
      return IsUint(len, 8) ? A::kPackets : A::kSkip;
    case 7: return IsUint(len, 2) ? A::kSrcPort : A::kSkip;
    case 11: return IsUint(len, 2) ? A::kDstPort : A::kSkip;
    case 4: return len == 1 ? A::kProto : A::kSkip;
    case 305:
    case 34:
    case 50: return IsUint(len, 4) ? A::kSampling : A::kSkip;
    case 309: return IsUint(len, 4) ? A::kSamplingSize : A::kSkip;
    case 310: return IsUint(len, 4) ? A::kSamplingPopulation : A::kSkip;
    case 48:
    case 302: return IsUint(len, 8) ? A::kSamplerId : A::kSkip;
    default: return A::kSkip;
  }
}

}  // namespace prism::ingest
