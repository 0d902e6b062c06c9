#include "service/fabric_pieces.h"

#include <gtest/gtest.h>

#include <string_view>

namespace prism::service {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(FabricPieces, AContributionInOnePieceIsWholeAtOnce) {
  FabricPieces p;
  FabricPieces::Whole w;
  EXPECT_EQ(p.Add({20, 0, 0, 1}, Bytes("LPFC.."), 7, &w), FabricPieces::AddResult::kWhole);
  EXPECT_EQ(w.bytes, "LPFC..");
  EXPECT_EQ(w.first_sequence, 7u);
  EXPECT_EQ(p.partial(), 0u);
}

TEST(FabricPieces, PiecesOfTwoShardsInterleavedComeBackInOrder) {
  FabricPieces p;
  FabricPieces::Whole w;
  EXPECT_EQ(p.Add({20, 1, 2, 3}, Bytes("ef"), 3, &w), FabricPieces::AddResult::kPartial);
  EXPECT_EQ(p.Add({20, 0, 0, 2}, Bytes("AB"), 4, &w), FabricPieces::AddResult::kPartial);
  EXPECT_EQ(p.Add({20, 1, 0, 3}, Bytes("ab"), 5, &w), FabricPieces::AddResult::kPartial);
  EXPECT_EQ(p.Add({20, 1, 0, 3}, Bytes("xx"), 6, &w), FabricPieces::AddResult::kDuplicate);
  EXPECT_EQ(p.ResumeSequence(9), 3u);
  EXPECT_EQ(p.Add({20, 1, 1, 3}, Bytes("cd"), 7, &w), FabricPieces::AddResult::kWhole);
  EXPECT_EQ(w.bytes, "abcdef");  // the first copy of piece 0 kept
  EXPECT_EQ(w.first_sequence, 3u);
  EXPECT_EQ(p.ResumeSequence(9), 4u);  // shard 0's first piece still waits
  p.DropUpTo(20);
  EXPECT_EQ(p.partial(), 0u);
  EXPECT_EQ(p.ResumeSequence(9), 9u);
}

}  // namespace
}  // namespace prism::service
