#include "analysis/jobs/job_recognition.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "analysis/jobs/union_find.h"
#include "analysis/pair_key_map.h"
#include "analysis/parallel_for.h"
#include "core/prefetch.h"

namespace prism::analysis {
namespace {

// Below this many rows per thread, starting a thread costs more than the rows it would hash.
constexpr size_t kMinRowsPerRun = size_t{1} << 16;

}  // namespace

RowPairs NumberRowPairs(std::span<const EndpointId> src, std::span<const EndpointId> dst,
                        int threads) {
  // Hash the pairs (few: thousands to a few million) instead of sorting a key per record; with
  // threads, each run of rows hashes its own, numbering its pairs as they come, and the runs'
  // keys are merged (sorted, so the same) and their numbers mapped to the merged ones.
  const size_t runs =
      std::clamp<size_t>(src.size() / kMinRowsPerRun, 1, size_t(std::max(1, threads)));
  RowPairs out;
  out.key_of_row.resize(src.size());
  std::vector<std::vector<uint64_t>> run_keys(runs);
  auto bounds = [&](size_t k) {
    return std::pair(src.size() * k / runs, src.size() * (k + 1) / runs);
  };
  ParallelFor(runs, int(runs), [&](size_t k) {
    PairKeyMap seen;
    uint64_t last = UINT64_MAX;
    uint32_t last_number = 0;
    const auto [begin, end] = bounds(k);
    for (size_t i = begin; i < end; ++i) {
      if (i + kPrefetchAhead < end)  // the table misses the cache at 100,000 GPUs
        seen.Prefetch(PairKey(src[i + kPrefetchAhead], dst[i + kPrefetchAhead]));
      const uint64_t key = PairKey(src[i], dst[i]);
      if (key != last) {
        last = key;
        last_number = seen.FindOrInsert(key);
      }
      out.key_of_row[i] = last_number;
    }
    run_keys[k] = seen.keys();
  });
  for (const auto& keys : run_keys) out.keys.insert(out.keys.end(), keys.begin(), keys.end());
  std::sort(out.keys.begin(), out.keys.end());
  out.keys.erase(std::unique(out.keys.begin(), out.keys.end()), out.keys.end());
  std::vector<std::vector<uint32_t>> merged(runs);
  ParallelFor(runs, int(runs), [&](size_t k) {
    merged[k].resize(run_keys[k].size());
    for (size_t n = 0; n < merged[k].size(); ++n)
      merged[k][n] = uint32_t(
          std::lower_bound(out.keys.begin(), out.keys.end(), run_keys[k][n]) - out.keys.begin());
    const auto [begin, end] = bounds(k);
    for (size_t i = begin; i < end; ++i) out.key_of_row[i] = merged[k][out.key_of_row[i]];
  });
  // Each run's keys are in the order of their first row in the run, and the runs in row order.
  std::vector<uint8_t> listed(out.keys.size(), 0);
  out.keys_by_first_row.reserve(out.keys.size());
  for (const std::vector<uint32_t>& run : merged)
    for (uint32_t key : run)
      if (!std::exchange(listed[key], 1)) out.keys_by_first_row.push_back(key);
  return out;
}

std::vector<uint64_t> DistinctPairs(std::span<const EndpointId> src,
                                    std::span<const EndpointId> dst, int threads) {
  return NumberRowPairs(src, dst, threads).keys;
}

namespace {

// A pair of two distinct GPU endpoints.
bool GpuPair(uint64_t key, const EndpointContext& ctx) {
  const EndpointId a = EndpointId(key >> 32), b = EndpointId(key);
  return a != b && ctx.is_gpu[a] && ctx.is_gpu[b];
}

// GPUs with at least hub_min_peers GPU peers: hubs, or busy GPUs (told apart below).
std::vector<uint8_t> HubCandidates(std::span<const uint64_t> pair_keys, size_t n,
                                   const EndpointContext& ctx,
                                   const JobRecognitionOptions& options) {
  std::vector<uint32_t> degree(n, 0);
  for (uint64_t key : pair_keys) {
    if (!GpuPair(key, ctx)) continue;
    ++degree[key >> 32];
    ++degree[uint32_t(key)];
  }
  std::vector<uint8_t> candidate(n, 0);
  for (size_t e = 0; e < n; ++e) candidate[e] = degree[e] >= options.hub_min_peers;
  return candidate;
}

// Components without the hub candidates, then with the host merge; a candidate whose peers lie
// in few components is an ordinary (busy) GPU and joins them, the others are hubs.
std::vector<EndpointId> JoinComponents(std::span<const uint64_t> pair_keys,
                                       const EndpointContext& ctx,
                                       const JobRecognitionOptions& options,
                                       const std::vector<uint8_t>& candidate, UnionFind& uf) {
  for (uint64_t key : pair_keys) {
    EndpointId a = EndpointId(key >> 32), b = EndpointId(key);
    if (GpuPair(key, ctx) && !candidate[a] && !candidate[b]) uf.Union(a, b);
  }
  std::vector<int> first_of_host(ctx.host_names.size(), -1);
  for (EndpointId e = 0; e < candidate.size(); ++e) {
    if (!ctx.is_gpu[e] || candidate[e]) continue;
    int& first = first_of_host[ctx.host[e]];
    if (first < 0) first = int(e);
    else uf.Union(uint32_t(first), e);
  }
  std::map<EndpointId, std::set<uint32_t>> touched;
  for (uint64_t key : pair_keys) {
    if (!GpuPair(key, ctx)) continue;
    EndpointId a = EndpointId(key >> 32), b = EndpointId(key);
    if (candidate[a] && !candidate[b]) touched[a].insert(uf.Find(b));
    if (candidate[b] && !candidate[a]) touched[b].insert(uf.Find(a));
  }
  std::vector<EndpointId> hubs;
  for (auto& [e, comps] : touched) {
    if (comps.size() >= options.hub_min_components) {
      hubs.push_back(e);
      continue;
    }
    for (uint32_t c : comps) uf.Union(e, c);
  }
  return hubs;
}

// Components with at least one GPU-GPU edge and enough GPUs, each sorted by address, in the
// order of their lowest address.
std::vector<std::vector<EndpointId>> JobComponents(std::span<const uint64_t> pair_keys,
                                                   const EndpointTable& endpoints,
                                                   const EndpointContext& ctx,
                                                   const JobRecognitionOptions& options,
                                                   const std::vector<uint8_t>& candidate,
                                                   const std::vector<EndpointId>& hubs,
                                                   UnionFind& uf) {
  const size_t n = candidate.size();
  std::vector<uint8_t> excluded(n, 0);
  for (EndpointId h : hubs) excluded[h] = 1;
  std::vector<uint8_t> has_edge(n, 0);
  for (uint64_t key : pair_keys) {
    EndpointId a = EndpointId(key >> 32), b = EndpointId(key);
    if (GpuPair(key, ctx) && !excluded[a] && !excluded[b]) has_edge[a] = has_edge[b] = 1;
  }
  std::map<uint32_t, std::vector<EndpointId>> members;
  for (EndpointId e = 0; e < n; ++e)
    if (ctx.is_gpu[e] && !excluded[e] && (has_edge[e] || !candidate[e])) members[uf.Find(e)].push_back(e);
  std::vector<std::vector<EndpointId>> comps;
  for (auto& [root, gpus] : members) {
    bool any_edge = std::any_of(gpus.begin(), gpus.end(), [&](EndpointId e) { return has_edge[e]; });
    if (!any_edge || gpus.size() < options.min_gpus) continue;
    std::sort(gpus.begin(), gpus.end(), [&](EndpointId a, EndpointId b) {
      return endpoints.Addr(a) < endpoints.Addr(b);
    });
    comps.push_back(std::move(gpus));
  }
  std::sort(comps.begin(), comps.end(), [&](const auto& x, const auto& y) {
    return endpoints.Addr(x.front()) < endpoints.Addr(y.front());
  });
  return comps;
}

}  // namespace

JobRecognition RecognizeJobs(std::span<const uint64_t> pair_keys, const EndpointTable& endpoints,
                             const EndpointContext& ctx, const JobRecognitionOptions& options) {
  const size_t n = endpoints.size();
  JobRecognition out;
  out.job_of.assign(n, -1);
  for (size_t e = 0; e < n; ++e) out.non_gpu_endpoints += !ctx.is_gpu[e];
  const std::vector<uint8_t> candidate = HubCandidates(pair_keys, n, ctx, options);
  UnionFind uf(n);
  out.hubs = JoinComponents(pair_keys, ctx, options, candidate, uf);
  std::vector<std::vector<EndpointId>> comps =
      JobComponents(pair_keys, endpoints, ctx, options, candidate, out.hubs, uf);
  for (size_t j = 0; j < comps.size(); ++j) {
    Job job;
    job.id = fmt::format("job{}", j);
    std::set<std::string> hosts;
    for (EndpointId e : comps[j]) {
      out.job_of[e] = int(j);
      hosts.insert(ctx.host_names[ctx.host[e]]);
    }
    job.hosts.assign(hosts.begin(), hosts.end());
    job.gpus = std::move(comps[j]);
    out.jobs.push_back(std::move(job));
  }
  return out;
}

}  // namespace prism::analysis
