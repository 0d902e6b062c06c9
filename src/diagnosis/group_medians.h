// File: diagnosis/group_medians.h
// Exact medians of many groups of non-negative values without keeping every value: a radix
// select over the values' bit patterns, in three passes over the same values.
//
// The bandwidth rule needs the median relative bandwidth of every (job, DP/PP) class over all of
// a window's records. Keeping the values cost 8 bytes per judged record at diagnosis's memory
// peak (docs/performance.md). Non-negative doubles order like their bit patterns, so
//   1. Observe: count and the lowest / highest bit pattern per group;
//   2. Count: a histogram of 4,096 equal ranges of bit patterns between them, per group;
//   3. Collect: only the values in the range(s) holding the middle rank(s);
// then nth_element over what was collected. The bit pattern grows about linearly with log2 of the
// value, so the ranges are nearly equal in log scale and an outlier costs resolution only
// logarithmically: the middle range holds a small share of a group's values.
// The result is the same double Median() (robust_stats.h) returns over all the values: the value
// of rank n/2 for odd n, (rank n/2 - 1 + rank n/2) / 2 for even n.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace prism::diagnosis {

class GroupMedians {
 public:
  explicit GroupMedians(size_t groups) : groups_(groups) {}

  // Pass 1: each value once. Values are non-negative (not -0.0) and not NaN.
  void Observe(size_t group, double v) {
    Group& g = groups_[group];
    const uint64_t u = Bits(v);
    ++g.n;
    g.lo = std::min(g.lo, u);
    g.hi = std::max(g.hi, u);
  }

  // Pass 2: the same values again (any order).
  void StartCounting() {
    size_t buckets = 0;
    for (Group& g : groups_) {
      if (g.n == 0) continue;
      g.shift = std::max(0, static_cast<int>(std::bit_width(g.hi - g.lo)) - kBucketBits);
      g.first_bucket = buckets;
      buckets += static_cast<size_t>((g.hi - g.lo) >> g.shift) + 1;
    }
    counts_.assign(buckets, 0);
  }
  void Count(size_t group, double v) {
    const Group& g = groups_[group];
    const uint64_t u = Bits(v);
    PRISM_CHECK(u >= g.lo && u <= g.hi);  // a value pass 1 did not see
    ++counts_[g.first_bucket + Bucket(g, u)];
  }

  // Pass 3: the same values once more; keeps those whose range holds a middle rank.
  void StartCollecting() {
    for (Group& g : groups_) {
      if (g.n == 0) continue;
      const uint64_t rank_lo = (g.n - 1) / 2, rank_hi = g.n / 2;
      uint64_t below = 0;
      size_t b = 0;
      while (below + counts_[g.first_bucket + b] <= rank_lo) below += counts_[g.first_bucket + b++];
      g.want_lo = g.want_hi = b;
      g.below = below;
      uint64_t through = below + counts_[g.first_bucket + b];
      while (through <= rank_hi) through += counts_[g.first_bucket + ++g.want_hi];
      g.picked.reserve(through - below);
    }
    std::vector<uint32_t>().swap(counts_);
  }
  void Collect(size_t group, double v) {
    Group& g = groups_[group];
    const uint64_t b = Bucket(g, Bits(v));
    if (b >= g.want_lo && b <= g.want_hi) g.picked.push_back(v);
  }

  // After pass 3: each group's median (0 for an empty group).
  std::vector<double> Finish() {
    std::vector<double> medians(groups_.size(), 0);
    for (size_t i = 0; i < groups_.size(); ++i) {
      Group& g = groups_[i];
      if (g.n == 0) continue;
      PRISM_CHECK(g.below + g.picked.size() > g.n / 2);  // the passes saw the same values
      const size_t k = static_cast<size_t>((g.n - 1) / 2 - g.below);
      std::nth_element(g.picked.begin(), g.picked.begin() + k, g.picked.end());
      const double lower = g.picked[k];
      if (g.n % 2 == 1) {
        medians[i] = lower;
      } else {
        const double upper = *std::min_element(g.picked.begin() + k + 1, g.picked.end());
        medians[i] = (lower + upper) / 2;  // as MedianInPlace: (rank n/2 - 1 + rank n/2) / 2
      }
      std::vector<double>().swap(g.picked);
    }
    return medians;
  }

 private:
  static constexpr int kBucketBits = 12;

  struct Group {
    uint64_t n = 0;
    uint64_t lo = UINT64_MAX, hi = 0;  // bit patterns
    int shift = 0;                     // bucket = (bits - lo) >> shift, < 2^kBucketBits
    size_t first_bucket = 0;           // in counts_
    uint64_t want_lo = 0, want_hi = 0; // buckets holding ranks (n - 1) / 2 and n / 2
    uint64_t below = 0;                // values in buckets before want_lo
    std::vector<double> picked;
  };

  static uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }
  static uint64_t Bucket(const Group& g, uint64_t u) { return (u - g.lo) >> g.shift; }

  std::vector<Group> groups_;
  std::vector<uint32_t> counts_;
};

}  // namespace prism::diagnosis
