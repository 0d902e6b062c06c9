#include "service/shard_assignment.h"

#include <algorithm>
#include <optional>
#include <string>

#include "service/stable_ids.h"

namespace prism::service {

namespace {

// The entry most of the job's GPUs have now (ties: the lower shard); none for a new job.
std::optional<scaleout::ShardEntry> Incumbent(const std::vector<IpAddr>& gpus,
                                              const std::map<IpAddr, scaleout::ShardEntry>& now) {
  std::map<std::pair<int, std::string>, size_t> votes;
  for (const IpAddr& g : gpus) {
    if (auto it = now.find(g); it != now.end()) ++votes[{it->second.shard, it->second.job}];
  }
  if (votes.empty()) return std::nullopt;
  auto best = std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) {
    return a.second < b.second || (a.second == b.second && a.first > b.first);
  });
  return scaleout::ShardEntry{best->first.first, best->first.second};
}

}  // namespace

std::map<IpAddr, scaleout::ShardEntry> AssignShards(
    const std::vector<std::vector<IpAddr>>& jobs,
    const std::map<IpAddr, scaleout::ShardEntry>& current, int shards) {
  std::map<IpAddr, scaleout::ShardEntry> out;
  std::vector<size_t> load(static_cast<size_t>(std::max(1, shards)), 0);
  std::vector<const std::vector<IpAddr>*> fresh;
  for (const std::vector<IpAddr>& gpus : jobs) {
    std::optional<scaleout::ShardEntry> e = Incumbent(gpus, current);
    if (!e || e->shard >= static_cast<int>(load.size())) {
      fresh.push_back(&gpus);
      continue;
    }
    load[e->shard] += gpus.size();
    for (const IpAddr& g : gpus) out[g] = *e;
  }
  // New jobs, largest first, each to the least-loaded shard (the lower one on a tie).
  std::stable_sort(fresh.begin(), fresh.end(),
                   [](const auto* a, const auto* b) { return a->size() > b->size(); });
  for (const std::vector<IpAddr>* gpus : fresh) {
    const int shard = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[shard] += gpus->size();
    const scaleout::ShardEntry e{shard, StableJobId(*gpus)};
    for (const IpAddr& g : *gpus) out[g] = e;
  }
  return out;
}

}  // namespace prism::service
