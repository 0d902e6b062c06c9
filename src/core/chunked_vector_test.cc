#include "core/chunked_vector.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/big_blocks.h"

namespace prism {
namespace {

struct Wide {  // the size of a grid cell: 65,536 to a chunk
  uint64_t value = 7;
  char pad[48];
};

// As many elements as fit a block, rounded down to a power of two (an index is a shift and a
// mask), for any element size.
TEST(ChunkedVector, AChunkIsThePowerOfTwoOfElementsThatFitsABlock) {
  const auto check = [](size_t k, size_t element_bytes) {
    EXPECT_EQ(k & (k - 1), 0u) << k;
    EXPECT_LE(k * element_bytes, kBigBlockMinBytes) << k;
    EXPECT_GT(2 * k * element_bytes, kBigBlockMinBytes) << k;
  };
  check(ChunkedVector<Wide>::kChunkElements, sizeof(Wide));
  check(ChunkedVector<uint32_t>::kChunkElements, sizeof(uint32_t));
  EXPECT_EQ(ChunkedVector<Wide>::kChunkElements, 65'536u);
}

TEST(ChunkedVector, IndicesReachEveryElementAcrossChunks) {
  ChunkedVector<Wide> list;
  const size_t n = 3 * ChunkedVector<Wide>::kChunkElements + 5;
  for (size_t i = 0; i < n; ++i) {
    Wide& w = list.emplace_back();
    EXPECT_EQ(w.value, 7u);  // value-initialized, as a deque's emplace_back()
    w.value = i;
  }
  ASSERT_EQ(list.size(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(list[i].value, i) << i;
  // An element's address does not move when the list grows (a chunk is never reallocated).
  const Wide* first = &list[0];
  for (size_t i = 0; i < ChunkedVector<Wide>::kChunkElements; ++i) list.emplace_back();
  EXPECT_EQ(&list[0], first);
}

TEST(ChunkedVector, DrainPassesEveryElementInOrderAndEmptiesTheList) {
  ChunkedVector<uint32_t> list;
  const size_t n = 2 * ChunkedVector<uint32_t>::kChunkElements + 3;
  for (size_t i = 0; i < n; ++i) list.push_back(static_cast<uint32_t>(i * 3));
  std::vector<uint32_t> seen;
  list.Drain([&](uint32_t& v) { seen.push_back(v); });
  ASSERT_EQ(seen.size(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], i * 3) << i;
  EXPECT_TRUE(list.empty());
  list.push_back(9);  // usable again after draining
  EXPECT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0], 9u);
}

TEST(ChunkedVector, ACopyGrowsOnFromItsLastElement) {
  ChunkedVector<uint32_t> list;
  const size_t k = ChunkedVector<uint32_t>::kChunkElements;
  for (size_t i = 0; i < k + 10; ++i) list.push_back(static_cast<uint32_t>(i));
  ChunkedVector<uint32_t> copy = list;
  for (size_t i = k + 10; i < 2 * k + 10; ++i) copy.push_back(static_cast<uint32_t>(i));
  ASSERT_EQ(copy.size(), 2 * k + 10);
  for (size_t i = 0; i < copy.size(); ++i) ASSERT_EQ(copy[i], i) << i;
  EXPECT_EQ(list.size(), k + 10);  // the original is untouched
}

// Chunks are big blocks: given back when the list goes, kept, and taken again by the next list
// (pages already touched, in huge pages where the system allows), not heap memory.
TEST(ChunkedVector, ChunksAreBigBlocksTheNextListTakesAgain) {
  ReleaseBigBlocks();
  {
    ChunkedVector<Wide> list;
    for (size_t i = 0; i < ChunkedVector<Wide>::kChunkElements + 1; ++i) list.emplace_back();
    EXPECT_EQ(KeptBigBlockBytes(), 0u);
  }
  EXPECT_EQ(KeptBigBlockBytes(), 2 * kBigBlockMinBytes);
  ChunkedVector<Wide> next;
  next.emplace_back();
  EXPECT_EQ(KeptBigBlockBytes(), kBigBlockMinBytes);
  next.Drain([](Wide&) {});
  EXPECT_EQ(KeptBigBlockBytes(), 2 * kBigBlockMinBytes);
  ReleaseBigBlocks();
}

}  // namespace
}  // namespace prism
