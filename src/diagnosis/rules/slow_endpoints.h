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

#include "diagnosis/rules/rule_context.h"

namespace prism::diagnosis {

struct SlowEndpointBin {
  EndpointId endpoint = 0;
  int64_t bin = 0;
  double pace_ratio = 0;  // median over its slow pairs of their pace in the bin / usual pace
  // The records of its slow pairs in the bin, ascending: what the rule checks against the other
  // elements those records crossed (a bad spine that most of them crossed explains the link).
  std::vector<uint32_t> slow_rows;
};

// Sorted by (endpoint, bin). Bins are [t0 + i * bin_ns, t0 + (i + 1) * bin_ns) by record start.
std::vector<SlowEndpointBin> FindSlowEndpoints(const RuleContext& rc, int64_t t0, int64_t bin_ns,
                                               int64_t bins);

}  // namespace prism::diagnosis
