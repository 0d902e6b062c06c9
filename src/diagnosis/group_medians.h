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
// logarithmically. Where a group's values sit at a few rate levels, the middle range holds the
// middle level, which can be most of the group: on the simulated scale-10k window 1.79 M of 2.43 M
// judged records' values are collected (14 MB), on paper 2.56 M of 4.58 M.
// The result is the same double Median() (robust_stats.h) returns over all the values: the value
// of rank n/2 for odd n, (rank n/2 - 1 + rank n/2) / 2 for even n.
//
// On threads the values are cut into runs: the first run passes its values to the GroupMedians,
// each further run to a part of its own (Part), and the parts are handed to StartCounting,
// StartCollecting and Finish, which merge what they saw. Pass 1's counts add and its bounds are a
// min / max; pass 2's histograms add, and each run's own histogram says how many values it will
// collect, so each run collects into its own slice of one buffer per group: the values are held
// once, as on one thread (a list per run, joined after the pass, raised the process's peak at two
// threads on scale-10k by up to 11 MB). A rank's value does not depend on which run saw it, so the
// medians are the same doubles on any cut.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"

namespace prism::diagnosis {

class GroupMedians {
 public:
  explicit GroupMedians(size_t groups) : groups_(groups) {}

  // A part for a further run of the values, made before pass 1.
  GroupMedians Part() const { return GroupMedians(groups_.size()); }

  // Pass 1: each value once. Values are non-negative (not -0.0) and not NaN.
  void Observe(size_t group, double v) {
    Group& g = groups_[group];
    const uint64_t u = Bits(v);
    ++g.n;
    g.lo = std::min(g.lo, u);
    g.hi = std::max(g.hi, u);
  }

  // Pass 2: the same values again (any order, any cut into runs).
  void StartCounting(std::span<GroupMedians> parts = {}) {
    for (GroupMedians& part : parts) {
      PRISM_CHECK(part.groups_.size() == groups_.size());
      for (size_t i = 0; i < groups_.size(); ++i) {
        Group& g = groups_[i];
        const Group& p = part.groups_[i];
        g.n += p.n;
        g.lo = std::min(g.lo, p.lo);
        g.hi = std::max(g.hi, p.hi);
      }
    }
    size_t buckets = 0;
    for (Group& g : groups_) {
      if (g.n == 0) continue;
      g.shift = std::max(0, static_cast<int>(std::bit_width(g.hi - g.lo)) - kBucketBits);
      g.first_bucket = buckets;
      buckets += static_cast<size_t>((g.hi - g.lo) >> g.shift) + 1;
    }
    counts_.assign(buckets, 0);
    for (GroupMedians& part : parts) {
      part.groups_ = groups_;
      part.counts_.assign(buckets, 0);
    }
  }
  void Count(size_t group, double v) {
    const Group& g = groups_[group];
    const uint64_t u = Bits(v);
    PRISM_CHECK(u >= g.lo && u <= g.hi);  // a value pass 1 did not see
    ++counts_[g.first_bucket + Bucket(g, u)];
  }

  // Pass 3: the same values once more; keeps those whose range holds a middle rank.
  void StartCollecting(std::span<GroupMedians> parts = {}) {
    for (GroupMedians& part : parts)
      for (size_t b = 0; b < counts_.size(); ++b) counts_[b] += part.counts_[b];
    picked_.resize(groups_.size());
    for (size_t i = 0; i < groups_.size(); ++i) {
      Group& g = groups_[i];
      if (g.n == 0) continue;
      const uint64_t rank_lo = (g.n - 1) / 2, rank_hi = g.n / 2;
      uint64_t below = 0;
      size_t b = 0;
      while (below + counts_[g.first_bucket + b] <= rank_lo) below += counts_[g.first_bucket + b++];
      g.want_lo = g.want_hi = b;
      g.below = below;
      uint64_t through = below + counts_[g.first_bucket + b];
      while (through <= rank_hi) through += counts_[g.first_bucket + ++g.want_hi];
      g.wanted = through - below;
      picked_[i] = std::make_unique_for_overwrite<double[]>(g.wanted);
      // The runs' slices: this run's first, then the parts' in order.
      uint64_t others = 0;
      for (GroupMedians& part : parts) {
        Group& p = part.groups_[i];
        p.want_lo = g.want_lo;
        p.want_hi = g.want_hi;
        p.wanted = part.CountIn(p);
        p.next = picked_[i].get() + (g.wanted - others - p.wanted);
        p.end = p.next + p.wanted;
        others += p.wanted;
      }
      g.next = picked_[i].get();
      g.end = g.next + (g.wanted - others);
    }
    std::vector<uint32_t>().swap(counts_);
    for (GroupMedians& part : parts) std::vector<uint32_t>().swap(part.counts_);
  }
  void Collect(size_t group, double v) {
    Group& g = groups_[group];
    const uint64_t b = Bucket(g, Bits(v));
    if (b >= g.want_lo && b <= g.want_hi) {
      PRISM_CHECK(g.next != g.end);  // more values than pass 2 counted in this run
      *g.next++ = v;
    }
  }

  // After pass 3: each group's median (0 for an empty group).
  std::vector<double> Finish(std::span<const GroupMedians> parts = {}) {
    std::vector<double> medians(groups_.size(), 0);
    for (size_t i = 0; i < groups_.size(); ++i) {
      Group& g = groups_[i];
      if (g.n == 0) continue;
      // Every run collected what it counted: the passes saw the same values.
      PRISM_CHECK(g.next == g.end);
      for (const GroupMedians& part : parts) PRISM_CHECK(part.groups_[i].next == part.groups_[i].end);
      PRISM_CHECK(g.below + g.wanted > g.n / 2);
      double* picked = picked_[i].get();
      const size_t k = static_cast<size_t>((g.n - 1) / 2 - g.below);
      std::nth_element(picked, picked + k, picked + g.wanted);
      const double lower = picked[k];
      if (g.n % 2 == 1) {
        medians[i] = lower;
      } else {
        const double upper = *std::min_element(picked + k + 1, picked + g.wanted);
        medians[i] = (lower + upper) / 2;  // as MedianInPlace: (rank n/2 - 1 + rank n/2) / 2
      }
      picked_[i].reset();
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
    uint64_t wanted = 0;               // values in buckets want_lo..want_hi (in a part: its own)
    double* next = nullptr;            // where this run's next collected value goes
    double* end = nullptr;             // the end of this run's slice
  };

  static uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }
  static uint64_t Bucket(const Group& g, uint64_t u) { return (u - g.lo) >> g.shift; }

  // This run's values counted in pass 2 in g's middle ranges.
  uint64_t CountIn(const Group& g) const {
    uint64_t n = 0;
    for (uint64_t b = g.want_lo; b <= g.want_hi; ++b) n += counts_[g.first_bucket + b];
    return n;
  }

  std::vector<Group> groups_;
  std::vector<uint32_t> counts_;
  std::vector<std::unique_ptr<double[]>> picked_;  // per group: its `wanted` values, all runs'
};

}  // namespace prism::diagnosis
