#include "service/pair_graph.h"

namespace prism::service {

bool PairGraph::Add(const scaleout::PairSighting& p) {
  if (!buckets_.empty() && p.bucket_start_ns <= buckets_.rbegin()->first - window_ns_) {
    return false;  // older than the window: no longer part of the graph
  }
  auto pair = p.src < p.dst ? std::make_pair(p.src, p.dst) : std::make_pair(p.dst, p.src);
  const bool fresh = buckets_[p.bucket_start_ns].insert(pair).second;
  const int64_t oldest_kept = buckets_.rbegin()->first - window_ns_;
  while (buckets_.begin()->first <= oldest_kept) buckets_.erase(buckets_.begin());
  return fresh;
}

std::vector<std::pair<IpAddr, IpAddr>> PairGraph::Pairs() const {
  std::set<std::pair<IpAddr, IpAddr>> all;
  for (const auto& [start, pairs] : buckets_) all.insert(pairs.begin(), pairs.end());
  return {all.begin(), all.end()};
}

}  // namespace prism::service
