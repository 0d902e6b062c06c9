#include "core/big_blocks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace prism {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

bool Overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const char *x = static_cast<const char*>(a), *y = static_cast<const char*>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

TEST(BigBlocks, AGivenBackBlockIsHandedOutAgainWithItsPages) {
  ReleaseBigBlocks();
  char* first = static_cast<char*>(TakeBigBlock(64 * kMiB));
  std::memset(first, 7, 64 * kMiB);
  GiveBackBigBlock(first, 64 * kMiB);
  EXPECT_EQ(KeptBigBlockBytes(), 64 * kMiB);
  // A smaller request gets the same pages (still holding what was written: not mapped afresh).
  char* again = static_cast<char*>(TakeBigBlock(40 * kMiB));
  EXPECT_EQ(again, first);
  EXPECT_EQ(again[40 * kMiB - 1], 7);
  // The rest (24 MiB) is kept as a block of its own and is what the next request gets.
  EXPECT_EQ(KeptBigBlockBytes(), 24 * kMiB);
  char* rest = static_cast<char*>(TakeBigBlock(22 * kMiB));
  EXPECT_EQ(rest, first + 40 * kMiB);
  EXPECT_EQ(KeptBigBlockBytes(), 0u);  // 2 MiB left: too small to keep, unmapped
  GiveBackBigBlock(again, 40 * kMiB);
  GiveBackBigBlock(rest, 22 * kMiB);
  // Neighbours merge: one block of 62 MiB, which a 62 MiB request can take whole.
  EXPECT_EQ(KeptBigBlocks(), 1u);
  EXPECT_EQ(TakeBigBlock(62 * kMiB), first);
  GiveBackBigBlock(first, 62 * kMiB);
  ReleaseBigBlocks();
  EXPECT_EQ(KeptBigBlockBytes(), 0u);
}

TEST(BigBlocks, LiveBlocksNeverShareAPage) {
  ReleaseBigBlocks();
  void* a = TakeBigBlock(32 * kMiB);
  GiveBackBigBlock(a, 32 * kMiB);
  // Two live takes of what one kept block could serve only one of whole: the first is cut from
  // it, the second grows its rest; neither overlaps the other.
  void* b = TakeBigBlock(20 * kMiB);
  void* c = TakeBigBlock(20 * kMiB);
  EXPECT_EQ(b, a);
  EXPECT_FALSE(Overlap(b, 20 * kMiB, c, 20 * kMiB));
  EXPECT_EQ(KeptBigBlockBytes(), 0u);
  // The smallest kept block that holds a request is the one handed out: two kept blocks with a
  // live one between them (no merge), 20 and 12 MiB; 12 MiB takes the second.
  void* d = TakeBigBlock(12 * kMiB);
  void* between = TakeBigBlock(4 * kMiB);
  GiveBackBigBlock(d, 12 * kMiB);
  GiveBackBigBlock(c, 20 * kMiB);
  if (KeptBigBlocks() == 2) {
    EXPECT_EQ(TakeBigBlock(12 * kMiB), d);
  }
  ReleaseBigBlocks();
  GiveBackBigBlock(b, 20 * kMiB);
  GiveBackBigBlock(between, 4 * kMiB);
  ReleaseBigBlocks();
}

TEST(BigBlocks, ARequestLargerThanAnyKeptBlockGrowsTheLargest) {
  ReleaseBigBlocks();
  char* small = static_cast<char*>(TakeBigBlock(8 * kMiB));
  char* large = static_cast<char*>(TakeBigBlock(20 * kMiB));
  std::memset(large, 5, 20 * kMiB);
  GiveBackBigBlock(small, 8 * kMiB);
  GiveBackBigBlock(large, 20 * kMiB);
  // Were they neighbours, they merged into one of 28 MiB; either way 30 MiB grows the largest,
  // whose pages (and what was written to them) come along.
  char* grown = static_cast<char*>(TakeBigBlock(30 * kMiB));
  const bool merged = KeptBigBlocks() == 0;
  EXPECT_EQ(KeptBigBlockBytes(), merged ? 0u : 8 * kMiB);
  const char* written = merged && small < large ? grown + 8 * kMiB : grown;
  EXPECT_EQ(written[0], 5);
  EXPECT_EQ(written[20 * kMiB - 1], 5);
  grown[30 * kMiB - 1] = 1;  // the grown part is mapped
  GiveBackBigBlock(grown, 30 * kMiB);
  ReleaseBigBlocks();
}

TEST(BigBlocks, KeepingForRequestsKeepsTheBlocksTheyWouldTake) {
  ReleaseBigBlocks();
  // Four live blocks given back apart (not neighbours: the ones between stay live meanwhile).
  void* live[7];
  const size_t mib[7] = {48, 4, 24, 4, 20, 4, 8};
  for (int i = 0; i < 7; ++i) live[i] = TakeBigBlock(mib[i] * kMiB);
  for (int i : {0, 2, 4, 6}) GiveBackBigBlock(live[i], mib[i] * kMiB);
  ASSERT_EQ(KeptBigBlocks(), 4u);
  // Two requests of 20 MiB: the 20 MiB block and 20 of the 24 MiB one are kept; the 48 and 8 MiB
  // blocks and the 24's last 4 MiB are unmapped.
  KeepBigBlocksFor({20 * kMiB, 20 * kMiB});
  EXPECT_EQ(KeptBigBlockBytes(), 40 * kMiB);
  EXPECT_EQ(KeptBigBlocks(), 2u);
  void* x = TakeBigBlock(20 * kMiB);
  void* y = TakeBigBlock(20 * kMiB);
  EXPECT_TRUE((x == live[2] && y == live[4]) || (x == live[4] && y == live[2]));
  EXPECT_EQ(KeptBigBlockBytes(), 0u);
  GiveBackBigBlock(x, 20 * kMiB);
  GiveBackBigBlock(y, 20 * kMiB);
  for (int i : {1, 3, 5}) GiveBackBigBlock(live[i], mib[i] * kMiB);
  ReleaseBigBlocks();
}

TEST(BigBlocks, KeepingForRequestsTheHeapServesKeepsNothing) {
  ReleaseBigBlocks();
  void* block = TakeBigBlock(16 * kMiB);
  GiveBackBigBlock(block, 16 * kMiB);
  // A request below kBigBlockMinBytes goes to the heap: a piece kept for it would stay resident.
  KeepBigBlocksFor({kBigBlockMinBytes - 1, 0});
  EXPECT_EQ(KeptBigBlockBytes(), 0u);
  EXPECT_EQ(KeptBigBlocks(), 0u);
  ReleaseBigBlocks();
}

TEST(BigBlocks, BigVectorsReuseEachOthersStorage) {
  ReleaseBigBlocks();
  const size_t n = 8 * kMiB / sizeof(uint64_t);
  const uint64_t* first_data;
  {
    BigVector<uint64_t> keys(n, 1);
    first_data = keys.data();
  }
  BigVector<uint32_t> rows(n);  // half the bytes: the first half of the keys' block
  EXPECT_EQ(static_cast<const void*>(rows.data()), static_cast<const void*>(first_data));
  EXPECT_EQ(rows[n - 1], 0u);  // value-initialized as any vector
  BigVector<uint8_t> small(1000);  // below kBigBlockMinBytes: the heap
  EXPECT_FALSE(Overlap(small.data(), small.size(), first_data, n * sizeof(uint64_t)));
  rows = BigVector<uint32_t>();
  ReleaseBigBlocks();
}

// The VmFlags line of the mapping of /proc/self/smaps that holds `p`; empty when none does.
std::string VmFlagsOf(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
    } else if (inside && line.starts_with("VmFlags:")) {
      return line;
    }
  }
  return "";
}

TEST(BigBlocks, AFreshBlockAsksForHugePages) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  ReleaseBigBlocks();
  void* block = TakeBigBlock(16 * kMiB);
  const std::string flags = VmFlagsOf(block);
  GiveBackBigBlock(block, 16 * kMiB);
  ReleaseBigBlocks();
  ASSERT_FALSE(flags.empty()) << "no mapping holds the block in /proc/self/smaps";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;  // hg: madvise(MADV_HUGEPAGE)
}

// A fresh block starts at a huge page boundary whatever its length, so that every huge page it
// covers whole is one (the system aligns a mapping only when its length is whole huge pages).
TEST(BigBlocks, AFreshBlockStartsAtAHugePageBoundary) {
  ReleaseBigBlocks();
  for (const size_t bytes : {5 * kMiB + 4096, 7 * kMiB + 12288, 9 * kMiB + 4096}) {
    void* block = TakeBigBlock(bytes);
    std::memset(block, 1, bytes);  // usable whole
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % (2 * kMiB), 0u) << bytes;
    GiveBackBigBlock(block, bytes);
    ReleaseBigBlocks();
  }
}

}  // namespace
}  // namespace prism
