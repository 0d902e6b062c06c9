// File: scaleout/fabric_stream.h
// Where shard analysers put their windows' fabric contributions for the fabric stage
// (docs/scale-out.md, The fabric stage): a stream of its own, LLMPRISM_FABRIC, a contribution per
// shard and window in one or more pieces (a NATS server takes messages up to its max_payload, 1 MB
// by default; a paper-scale window's contribution is tens of MB), piece k of n on
// `fabric.<window end ns>.<shard>.<k>.<n>`, with the message id `<window end>.<shard>.<k>.<n>` so
// that a second copy (an analyser restarted, or a shard taken over, analysing the window again)
// is dropped by the stream within its deduplication window. The bytes are the
// contribution's encoding (diagnosis/rules/fabric_contribution_codec.h); this file knows only
// the names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "scaleout/jetstream.h"

namespace prism::scaleout {

inline constexpr char kFabricStream[] = "LLMPRISM_FABRIC";
inline constexpr char kFabricSubjects[] = "fabric.>";

struct FabricKey {
  int64_t window_end_ns = 0;
  int shard = 0;
  int part = 0, parts = 1;  // piece `part` (from 0) of `parts`
  bool operator==(const FabricKey&) const = default;
};

// The stream as a publisher or the fabric stage creates it when absent.
StreamSpec FabricStreamSpec(int replicas);

std::string FabricSubject(const FabricKey& k);    // fabric.<end>.<shard>.<part>.<parts>
std::string FabricMessageId(const FabricKey& k);  // <end>.<shard>.<part>.<parts>
// The key of a subject FabricSubject made; nullopt for anything else.
std::optional<FabricKey> ParseFabricSubject(std::string_view subject);

// The shard an analyser reads when its --nats-subject is one shard's, records.shard.<n>.> (or
// records.shard.<n>.<anything>); nullopt otherwise.
std::optional<int> ShardOfRecordSubject(std::string_view subject);

}  // namespace prism::scaleout
