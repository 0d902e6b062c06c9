// File: service/pair_graph.h
// The recogniser's pair graph (docs/scale-out.md, Sharding by job): which endpoint pairs
// exchanged traffic in the last window, from the collectors' pair summaries
// (scaleout/pair_summary.h) and the records it is asked to route. Kept per step bucket so that
// pairs older than a window drop out, as they drop out of serve's windows.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/ip_addr.h"
#include "scaleout/pair_summary.h"

namespace prism::service {

class PairGraph {
 public:
  explicit PairGraph(int64_t window_ns) : window_ns_(window_ns) {}
  // True when the pair is new to its bucket (the graph may have changed).
  bool Add(const scaleout::PairSighting& p);
  // Distinct unordered pairs of the buckets that start within a window of the newest one.
  std::vector<std::pair<IpAddr, IpAddr>> Pairs() const;
  size_t buckets() const { return buckets_.size(); }

 private:
  int64_t window_ns_;
  std::map<int64_t, std::set<std::pair<IpAddr, IpAddr>>> buckets_;  // by bucket start
};

}  // namespace prism::service
