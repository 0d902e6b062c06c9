// File: diagnosis/rules/slow_endpoints.h
// The bandwidth rule's second view of access links (bandwidth_rule.h): each endpoint against its
// own pairs' usual pace, not against its peers.
//
// Judging an access link against the other access links of its job fails where one bad link
// slows a large share of the job's flows: in a job of four GPUs, a slow NIC link slows both
// directions of its DP pair, so half of the job's DP flows are slow and the peer median no longer
// says which half is normal. What stays true at any size is where the slow flows meet. So, per
// time bin:
//  1. every directed pair of GPUs in one job gets its pace in the bin: the bytes of its data
//     records over their summed durations (a record's split into flowlets or merged into one
//     burst leaves this unchanged), and its usual pace, the 75th percentile over the window's
//     bins (as the rule's own-history check: a pair slow all window long is the fabric's normal,
//     and the service carries history across windows);
//  2. a pair is slow in the bin when it runs below (1 - min_bw_drop) of its usual pace;
//  3. an endpoint is slow when most of its pairs in one direction (sent, received, or both)
//     are slow, at least two of them, to at least two peers — while those peers' pairs with
//     anyone else are mostly not slow: a bad link slows its own endpoint's flows only, where a
//     collective waiting on a straggler or crossing a bad spine slows its peers' flows too.
// Records of one packet (start == end) carry no pace and are left out: a capture of a segmented
// send holds 64 KiB "packets" that would read as terabits per second.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/pair_key_map.h"
#include "diagnosis/rules/rule_context.h"
#include "flow/flow_table.h"

namespace prism::diagnosis {

struct SlowEndpointBin {
  EndpointId endpoint = 0;
  int64_t bin = 0;
  double pace_ratio = 0;  // median over its slow pairs of their pace in the bin / usual pace
  // The records of its slow pairs in the bin, ascending: what the rule checks against the other
  // elements those records crossed (a bad spine that most of them crossed explains the link).
  std::vector<uint32_t> slow_rows;

  bool operator==(const SlowEndpointBin&) const = default;
};

// Step 1's sums: every directed pair's paced records per bin, their bytes, durations and count.
// Filled by the record classes' first pass (RecordClasses::Measure in bandwidth_cells.h), which
// reads each record's columns and looks up its pair anyway: a pass of the paces' own read the
// columns again and looked the pair up in a map of its own, 70 ms of 1.6 s at 10,240 GPUs on one
// thread (docs/performance.md). Bins are [t0 + i * bin_ns, t0 + (i + 1) * bin_ns) by record start.
class PairPaceSums {
 public:
  PairPaceSums(int64_t t0, int64_t bin_ns, int64_t bins);

  // Sizes the slots of the caller's pair numbers below `pairs` (see Add).
  void NumberPairs(size_t pairs) { slot_of_.assign(2 * pairs, kNoSlot); }
  // Adds row `r`, a record that carries a pace (PacedJob in bandwidth_cells.h >= 0). `pair`: the
  // number the caller gives its pair (PairKey), below NumberPairs' count, or kNoPair to have it
  // looked up here.
  void Add(const flow::FlowTable& f, size_t r, uint32_t pair);
  // Adds the sums of a later run of rows: those of one pass over both runs (the sums are of
  // whole bytes and nanoseconds, exact in any order).
  void Append(PairPaceSums&& later);

  // Empty sums of the same bins and pair numbers, for another run of rows (Append).
  PairPaceSums EmptyCopy() const;

  static constexpr uint32_t kNoPair = analysis::PairKeyMap::kNone;

  // A pair's records in a bin.
  struct Bin {
    double bytes = 0;  // whole bytes, summed exactly below 2^53
    int64_t duration_ns = 0;
    uint32_t records = 0;
  };

 private:
  friend std::vector<SlowEndpointBin> FindSlowEndpoints(const RuleContext& rc,
                                                        PairPaceSums sums);
  static constexpr uint32_t kNoSlot = UINT32_MAX;

  // The directed pair's number here (first seen, first numbered), made at its first record.
  uint32_t PairOf(uint32_t* slot, EndpointId src, EndpointId dst);
  // The slot of a directed pair of no caller's number, made at its first record.
  uint32_t* OtherSlot(EndpointId src, EndpointId dst);

  int64_t t0_, bin_ns_, bins_;
  std::vector<uint32_t> slot_of_;  // [caller's pair * 2 + (src > dst)] -> pair here
  analysis::PairKeyMap others_;    // directed key -> slot, for records of no caller's number
  std::vector<uint32_t> other_pair_;  // others_' slot -> pair here
  std::vector<EndpointId> src_, dst_;  // by pair here
  // Summed bin by bin ([bin][pair], each bin's list grown to the pairs seen so far when it is
  // used): rows come in start order, so the sums being added to are one bin's, not every bin's
  // of every pair. At 100,000 GPUs (384,000 directed pairs, 13 bins) that is 9 of 120 MB, where
  // [pair * bins + bin] missed the cache on nearly every record.
  std::vector<std::vector<Bin>> by_bin_;
};

// Sorted by (endpoint, bin). The sums are taken (and freed before the caller goes on: the bandwidth
// rule builds its cell grid, its memory peak, next).
std::vector<SlowEndpointBin> FindSlowEndpoints(const RuleContext& rc, PairPaceSums sums);

// The same, its sums made by a pass of its own over the records.
std::vector<SlowEndpointBin> FindSlowEndpoints(const RuleContext& rc, int64_t t0, int64_t bin_ns,
                                               int64_t bins);

}  // namespace prism::diagnosis
