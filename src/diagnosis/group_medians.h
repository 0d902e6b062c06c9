// File: diagnosis/group_medians.h
// Exact medians of many groups of non-negative values without keeping every value: a radix
// select over the values' bit patterns, in two passes over the same values.
//
// The bandwidth rule needs the median relative bandwidth of every (job, DP/PP) class over all of
// a window's records. Keeping the values cost 8 bytes per judged record at diagnosis's memory
// peak (docs/performance.md). Non-negative doubles order like their bit patterns, so
//   1. Observe: a histogram per group of the values' bit patterns, each bucket the patterns that
//      agree above a bit (at first 64 buckets per power of two of the value), at most 4,096
//      buckets: a group whose values spread wider has its buckets merged in pairs;
//   2. Collect: only the values in the bucket(s) holding the middle rank(s);
// then nth_element over what was collected. The bit pattern grows about linearly with log2 of the
// value, so the buckets are nearly equal in log scale and an outlier costs resolution only
// logarithmically. Where a group's values sit at a few rate levels, the middle bucket holds the
// middle level, which can be most of the group: on the simulated scale-10k window 1.79 M of 2.43 M
// judged records' values are collected (14 MB), on paper 2.56 M of 4.58 M.
// The result is the same double Median() (robust_stats.h) returns over all the values: the value
// of rank n/2 for odd n, (rank n/2 - 1 + rank n/2) / 2 for even n.
// It took three passes before: the bounds first, then 4,096 equal ranges between them, then the
// values. Buckets fixed in the bit patterns need no bounds, and the pass over every record saved
// was ~22 ms of the one-thread run at 10,240 GPUs (docs/performance.md).
//
// On threads the values are cut into runs: the first run passes its values to the GroupMedians,
// each further run to a part of its own (Part), and the parts are handed to StartCollecting and
// Finish, which merge what they saw. Pass 1's histograms add once brought to the coarsest buckets
// any run used; each run's own histogram says how many values it will collect, so each run
// collects into its own slice of one buffer per group: the values are held once, as on one thread
// (a list per run, joined after the pass, raised the process's peak at two threads on scale-10k by
// up to 11 MB). A rank's value does not depend on which run saw it, so the medians are the same
// doubles on any cut.
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
    // A bucket below the histogram's first wraps around to a large index: widened too.
    if ((u >> g.shift) - g.first >= g.counts.size()) Widen(g, u);
    ++g.counts[(u >> g.shift) - g.first];
    ++g.n;
  }

  // Pass 2: the same values again, in any order, each run's to the part that saw them in pass 1;
  // keeps those whose bucket holds a middle rank.
  void StartCollecting(std::span<GroupMedians> parts = {}) {
    for (const GroupMedians& part : parts) PRISM_CHECK(part.groups_.size() == groups_.size());
    picked_.resize(groups_.size());
    std::vector<const Group*> runs;
    for (size_t i = 0; i < groups_.size(); ++i) {
      Group& g = groups_[i];
      runs.assign(1, &g);
      for (const GroupMedians& part : parts) runs.push_back(&part.groups_[i]);
      const Merged m = Merge(runs);
      if (m.n == 0) continue;
      // The buckets holding ranks (n - 1) / 2 and n / 2.
      const uint64_t rank_lo = (m.n - 1) / 2, rank_hi = m.n / 2;
      uint64_t below = 0;
      size_t b = 0;
      while (below + m.counts[b] <= rank_lo) below += m.counts[b++];
      size_t last = b;
      uint64_t through = below + m.counts[b];
      while (through <= rank_hi) through += m.counts[++last];
      const Wanted want{m.shift, m.first + b, m.first + last};
      const uint64_t wanted = through - below;
      picked_[i] = std::make_unique_for_overwrite<double[]>(wanted);
      // The runs' slices: this run's first, then the parts' in order.
      uint64_t others = 0;
      for (GroupMedians& part : parts) {
        Group& p = part.groups_[i];
        const uint64_t own = p.CountIn(want);
        p.Collects(want, picked_[i].get() + (wanted - others - own), own);
        others += own;
      }
      g.n = m.n;
      g.below = below;
      g.wanted = wanted;
      g.Collects(want, picked_[i].get(), wanted - others);
    }
  }
  void Collect(size_t group, double v) {
    Group& g = groups_[group];
    const uint64_t bucket = Bits(v) >> g.shift;
    if (bucket >= g.want_lo && bucket <= g.want_hi) {
      PRISM_CHECK(g.next != g.end);  // more values than pass 1 counted in this run
      *g.next++ = v;
    }
  }

  // After pass 2: each group's median (0 for an empty group).
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
  static constexpr uint64_t kMaxBuckets = 4096;
  // A bucket at first: the patterns that agree above bit 46, 2^6 buckets per power of two (the
  // 52 bits below the exponent). At most 5 halvings reach the widest needed: every non-negative
  // pattern is below 2^63, so 2^51-wide buckets are 4,096.
  static constexpr int kFinestShift = 46;

  // Buckets [want_lo, want_hi] of width 2^shift, the ones holding the middle ranks.
  struct Wanted {
    int shift;
    uint64_t lo, hi;
  };

  struct Group {
    uint64_t n = 0;
    int shift = kFinestShift;       // a value's bucket is its bit pattern >> shift
    uint64_t first = 0;             // the bucket of counts[0]
    std::vector<uint32_t> counts;   // pass 1's histogram; freed by StartCollecting
    uint64_t want_lo = 1, want_hi = 0;  // buckets collected in pass 2 (none until then)
    uint64_t below = 0;             // values in buckets before want_lo (all runs')
    uint64_t wanted = 0;            // values in buckets want_lo..want_hi (all runs')
    double* next = nullptr;         // where this run's next collected value goes
    double* end = nullptr;          // the end of this run's slice

    // This run's values of pass 1 in the wanted buckets (at their width, not narrower than ours).
    uint64_t CountIn(const Wanted& w) const {
      uint64_t n = 0;
      for (size_t b = 0; b < counts.size(); ++b) {
        const uint64_t bucket = (first + b) >> (w.shift - shift);
        if (bucket >= w.lo && bucket <= w.hi) n += counts[b];
      }
      return n;
    }
    // Pass 2 collects this run's `own` values of the wanted buckets from `slice` on.
    void Collects(const Wanted& w, double* slice, uint64_t own) {
      std::vector<uint32_t>().swap(counts);
      shift = w.shift;
      want_lo = w.lo;
      want_hi = w.hi;
      next = slice;
      end = slice + own;
    }
  };

  // The runs' histograms of one group added, at the widest buckets any run used and coarser
  // still where their ranges together span more than kMaxBuckets.
  struct Merged {
    uint64_t n = 0;
    int shift = 0;
    uint64_t first = 0;
    std::vector<uint32_t> counts;
  };
  static Merged Merge(const std::vector<const Group*>& runs) {
    Merged m;
    for (const Group* run : runs) {
      m.n += run->n;
      if (!run->counts.empty()) m.shift = std::max(m.shift, run->shift);
    }
    if (m.n == 0) return m;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const Group* run : runs) {
      if (run->counts.empty()) continue;
      lo = std::min(lo, run->first >> (m.shift - run->shift));
      hi = std::max(hi, (run->first + run->counts.size() - 1) >> (m.shift - run->shift));
    }
    while (hi - lo >= kMaxBuckets) ++m.shift, lo >>= 1, hi >>= 1;
    m.first = lo;
    m.counts.assign(hi - lo + 1, 0);
    for (const Group* run : runs)
      for (size_t b = 0; b < run->counts.size(); ++b)
        m.counts[((run->first + b) >> (m.shift - run->shift)) - lo] += run->counts[b];
    return m;
  }

  // Makes room in g's histogram for pattern u: the range grown to take its bucket and as many
  // buckets again on that side (values often keep going one way), within kMaxBuckets; the buckets
  // merged in pairs (coarser by one bit) until the range fits.
  static void Widen(Group& g, uint64_t u) {
    if (g.counts.empty()) {
      g.first = u >> g.shift;
      g.counts.assign(1, 0);
      return;
    }
    const uint64_t bucket = u >> g.shift;
    const bool lower = bucket < g.first;
    uint64_t lo = std::min(g.first, bucket), hi = std::max(g.first + g.counts.size() - 1, bucket);
    int coarser = 0;
    while ((hi >> coarser) - (lo >> coarser) >= kMaxBuckets) ++coarser;
    lo >>= coarser;
    hi >>= coarser;
    const uint64_t size = hi - lo + 1, room = std::min(size, kMaxBuckets - size);
    if (lower) lo = lo >= room ? lo - room : 0;
    else hi += room;
    std::vector<uint32_t> counts(hi - lo + 1, 0);
    for (size_t b = 0; b < g.counts.size(); ++b) counts[((g.first + b) >> coarser) - lo] += g.counts[b];
    g.counts.swap(counts);
    g.first = lo;
    g.shift += coarser;
  }

  static uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

  std::vector<Group> groups_;
  std::vector<std::unique_ptr<double[]>> picked_;  // per group: its `wanted` values, all runs'
};

}  // namespace prism::diagnosis
