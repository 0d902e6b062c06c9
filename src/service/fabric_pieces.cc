#include "service/fabric_pieces.h"

#include <algorithm>

namespace prism::service {

FabricPieces::AddResult FabricPieces::Add(const scaleout::FabricKey& key,
                                          std::span<const uint8_t> bytes, uint64_t sequence,
                                          Whole* whole) {
  if (key.parts <= 1) {
    whole->bytes.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    whole->first_sequence = sequence;
    return AddResult::kWhole;
  }
  Partial& p = partial_[{key.window_end_ns, key.shard, key.parts}];
  if (p.pieces.empty()) p.pieces.resize(static_cast<size_t>(key.parts));
  std::optional<std::string>& piece = p.pieces[static_cast<size_t>(key.part)];
  if (piece) return AddResult::kDuplicate;
  piece.emplace(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  ++p.have;
  p.first_sequence = std::min(p.first_sequence, sequence);
  if (p.have < p.pieces.size()) return AddResult::kPartial;
  whole->bytes.clear();
  for (const auto& s : p.pieces) whole->bytes += *s;
  whole->first_sequence = p.first_sequence;
  partial_.erase({key.window_end_ns, key.shard, key.parts});
  return AddResult::kWhole;
}

void FabricPieces::DropUpTo(int64_t end_ns) {
  std::erase_if(partial_, [&](const auto& kv) { return std::get<0>(kv.first) <= end_ns; });
}

uint64_t FabricPieces::ResumeSequence(uint64_t next_sequence) const {
  uint64_t first = next_sequence;
  for (const auto& [key, p] : partial_) first = std::min(first, p.first_sequence);
  return first;
}

}  // namespace prism::service
