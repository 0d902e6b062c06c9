// File: service/fabric_pieces.h
// A fabric contribution larger than the NATS server takes in one message (its max_payload, 1 MB
// by default) goes as several pieces (scaleout/fabric_stream.h: fabric.<end>.<shard>.<k>.<n>);
// the fabric stage puts the pieces of each (window, shard) back together here before decoding.
// A piece seen twice keeps the first; pieces of one contribution may come between pieces of
// others (two shards publishing at once).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "scaleout/fabric_stream.h"

namespace prism::service {

class FabricPieces {
 public:
  struct Whole {
    std::string bytes;
    uint64_t first_sequence = 0;  // of its first piece to come
  };
  enum class AddResult { kPartial, kWhole, kDuplicate };
  // The piece `key` (key.part of key.parts) of sequence `sequence`; kWhole sets `whole`.
  AddResult Add(const scaleout::FabricKey& key, std::span<const uint8_t> bytes, uint64_t sequence,
                Whole* whole);
  // The first sequence of a piece of a contribution not yet whole; `next_sequence` when none.
  uint64_t ResumeSequence(uint64_t next_sequence) const;
  // Pieces of windows ending at or before `end_ns` (judged: they would wait for ever).
  void DropUpTo(int64_t end_ns);
  size_t partial() const { return partial_.size(); }

 private:
  struct Partial {
    std::vector<std::optional<std::string>> pieces;
    size_t have = 0;
    uint64_t first_sequence = UINT64_MAX;
  };
  std::map<std::tuple<int64_t, int, int>, Partial> partial_;  // (end, shard, parts)
};

}  // namespace prism::service
