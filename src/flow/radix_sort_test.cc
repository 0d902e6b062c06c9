#include "flow/radix_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace prism::flow {
namespace {

// Keys with many equal sort bits and distinct low bits: a stable sort keeps the low bits in
// order within each run of equal sort bits, so any instability shows.
std::vector<uint64_t> Keys(size_t n, int low_bit, int bits, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> keys(n);
  const uint64_t sort_mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  for (size_t i = 0; i < n; ++i) keys[i] = ((rng() % 1000 * 7919) & sort_mask) << low_bit | i;
  return keys;
}

std::vector<uint64_t> Reference(std::vector<uint64_t> keys, int low_bit) {
  std::stable_sort(keys.begin(), keys.end(),
                   [&](uint64_t a, uint64_t b) { return (a >> low_bit) < (b >> low_bit); });
  return keys;
}

TEST(RadixSort, AnyThreadCountGivesTheStableOrder) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{140'001}, size_t{300'007}}) {
    for (int bits : {1, 13, 24, 37}) {
      const std::vector<uint64_t> keys = Keys(n, 20, bits, n + size_t(bits));
      const std::vector<uint64_t> want = Reference(keys, 20);
      for (int threads : {1, 2, 3, 5}) {
        SCOPED_TRACE(testing::Message() << "n " << n << " bits " << bits << " threads " << threads);
        BigVector<uint64_t> got(keys.begin(), keys.end());
        RadixSortByBits(&got, 20, bits, threads);
        EXPECT_EQ(std::vector<uint64_t>(got.begin(), got.end()), want);
      }
    }
  }
}

// Past 2^21 keys a run's keys are written out a cache line at a time (radix_sort.cc, Scatter):
// the same stable order, on one thread and on two (a run each, both that large).
TEST(RadixSort, KeysWrittenOutALineAtATimeKeepTheStableOrder) {
  const size_t n = (size_t{1} << 22) + 13;
  const std::vector<uint64_t> keys = Keys(n, 23, 37, 7);
  const std::vector<uint64_t> want = Reference(keys, 23);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(testing::Message() << "threads " << threads);
    BigVector<uint64_t> got(keys.begin(), keys.end());
    RadixSortByBits(&got, 23, 37, threads);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()));
  }
}

// On threads, keys spread over the top digit are sorted by it in one pass and then bucket by
// bucket (radix_sort.cc, SortByTopDigitThenBuckets); crowded into a few top digits, by LSD passes
// over all of them. Both give the stable order, with ties on the sort bits.
TEST(RadixSort, BucketsOfTheTopDigitGiveTheStableOrder) {
  const size_t n = 300'007;
  for (int bits : {12, 14, 20, 37}) {
    for (bool crowded : {false, true}) {
      std::mt19937_64 rng(uint64_t(bits) * 2 + crowded);
      std::vector<uint64_t> keys(n);
      for (size_t i = 0; i < n; ++i) {
        uint64_t v = rng() & ((uint64_t{1} << bits) - 1);
        if (i % 3 == 0) v = keys[i / 2] >> 20;  // ties with an earlier key
        if (crowded) v >>= std::max(0, bits - 16) + 1;  // a few top digits hold every key
        keys[i] = v << 20 | i;
      }
      const std::vector<uint64_t> want = Reference(keys, 20);
      for (int threads : {2, 3}) {
        SCOPED_TRACE(testing::Message() << "bits " << bits << " crowded " << crowded << " threads "
                                        << threads);
        BigVector<uint64_t> got(keys.begin(), keys.end());
        RadixSortByBits(&got, 20, bits, threads);
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()));
      }
    }
  }
}

// The starts sorted in place with the rows they came from: a stable sort by start, on any thread
// count, with starts spread over the top digit (keys made as they are scattered) and crowded into
// a few top digits (keys made first, then sorted), both with many equal starts.
TEST(RadixSort, StartsAndRowsAreTheStableOrder) {
  for (size_t n : {size_t{1}, size_t{1000}, size_t{300'007}, (size_t{1} << 22) + 5}) {
    for (bool crowded : {false, true}) {
      std::mt19937_64 rng(n * 2 + crowded);
      const int64_t lo = -123'456'789;
      std::vector<int64_t> start(n);
      for (size_t r = 0; r < n; ++r) {
        uint64_t v = rng() % (uint64_t{1} << 36);
        if (r % 3 == 0) v = uint64_t(start[r / 2] - lo);  // ties with an earlier row
        if (crowded) v >>= 34;  // four starts: top digits too crowded to sort bucket by bucket
        start[r] = lo + int64_t(v);
      }
      start[n / 2] = lo;
      std::vector<uint32_t> want(n);
      std::iota(want.begin(), want.end(), 0u);
      std::stable_sort(want.begin(), want.end(),
                       [&](uint32_t a, uint32_t b) { return start[a] < start[b]; });
      const int64_t hi = *std::max_element(start.begin(), start.end());
      const int start_bits = hi == lo ? 0 : 64 - __builtin_clzll(uint64_t(hi - lo));
      const int row_bits = n < 2 ? 1 : 64 - __builtin_clzll(n - 1);
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(testing::Message() << "n " << n << " crowded " << crowded << " threads "
                                        << threads);
        std::vector<uint32_t> got(n, 0xffffffffu);
        std::vector<int64_t> sorted = start;
        SortStartsAndRows(sorted, lo, row_bits, start_bits, threads, got);
        EXPECT_TRUE(got == want);
        for (size_t i = 0; i < n; ++i) {
          if (sorted[i] != start[want[i]]) {
            ADD_FAILURE() << "start " << i << ": " << sorted[i] << " != " << start[want[i]];
            break;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace prism::flow
