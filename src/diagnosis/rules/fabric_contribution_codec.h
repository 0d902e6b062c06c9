// File: diagnosis/rules/fabric_contribution_codec.h
// A fabric contribution (fabric_contribution.h) as bytes, for a shard's analyser to publish and
// the fabric stage to read (docs/scale-out.md, The fabric stage). Little-endian base-128 integers
// throughout (signed ones zigzagged): "LPFC", a version byte, the window's first and last record
// start, the names (jobs, leaves, points), the endpoints (address, job, leaf), the labelled pairs,
// then per record its start as a step from the previous one's, its duration, bytes, ends and
// point. Records come by start, so most steps and durations take one to three bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"
#include "diagnosis/rules/fabric_contribution.h"

namespace prism::diagnosis {

std::string EncodeFabricContribution(const FabricContribution& c);

// Bad bytes (truncated, an index out of range, bytes left over) are an error naming the offset.
StatusOr<FabricContribution> DecodeFabricContribution(std::span<const uint8_t> bytes);

}  // namespace prism::diagnosis
