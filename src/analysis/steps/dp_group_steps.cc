#include "analysis/steps/dp_group_steps.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "analysis/jobs/union_find.h"
#include "analysis/parallel_for.h"

namespace prism::analysis {
namespace {

uint32_t MedianU32(std::vector<uint32_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

std::vector<Activity> DpActivities(std::vector<std::pair<int64_t, int64_t>> transfers,
                                   int64_t window_end_ns, double tail_guard_steps,
                                   const StepSegmenterOptions& options) {
  std::sort(transfers.begin(), transfers.end());
  std::vector<int64_t> starts(transfers.size()), ends(transfers.size());
  for (size_t i = 0; i < transfers.size(); ++i) {
    starts[i] = transfers[i].first;
    ends[i] = transfers[i].second;
  }
  auto acts = SegmentSteps(starts, ends, options);
  if (acts.size() >= 3) {
    std::vector<int64_t> gaps;
    for (size_t i = 1; i < acts.size(); ++i) gaps.push_back(acts[i].end_ns - acts[i - 1].end_ns);
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    const int64_t step = gaps[gaps.size() / 2];
    if (window_end_ns - acts.back().end_ns < int64_t(tail_guard_steps * double(step)))
      acts.pop_back();
  }
  return acts;
}

DpGroupSteps FindDpGroupSteps(const std::vector<Pair>& pairs,
                              const std::vector<PairTransfers>& transfers,
                              const EndpointContext& ctx, const std::vector<int>& job_of,
                              const std::vector<int>& tp_of_job, int64_t window_end_ns,
                              double tail_guard_steps, const StepSegmenterOptions& options,
                              int threads) {
  const size_t num_endpoints = ctx.host.size();
  DpGroupSteps out;
  out.group_of.assign(num_endpoints, -1);
  UnionFind uf(num_endpoints);
  for (const Pair& p : pairs)
    if (p.label == PairLabel::kDp) uf.Union(p.a, p.b);
  // Inside a host, a ring hops over NVLink between the GPUs of one TP rank.
  std::map<std::tuple<int, int, int>, uint32_t> first_of;  // (job, host, local mod tp) -> GPU
  for (uint32_t e = 0; e < num_endpoints; ++e) {
    const int j = job_of[e];
    if (j < 0 || ctx.local_gpu[e] < 0) continue;
    auto key = std::make_tuple(j, ctx.host[e], ctx.local_gpu[e] % std::max(1, tp_of_job[j]));
    auto [it, inserted] = first_of.try_emplace(key, e);
    if (!inserted) uf.Union(it->second, e);
  }
  std::vector<int> root_group(num_endpoints, -1);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> group_transfers;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair& p = pairs[i];
    if (p.label != PairLabel::kDp) continue;
    uint32_t root = uf.Find(p.a);
    if (root_group[root] < 0) {
      root_group[root] = static_cast<int>(group_transfers.size());
      group_transfers.emplace_back();
    }
    const int g = root_group[root];
    out.group_of[p.a] = out.group_of[p.b] = g;
    for (const Transfer& t : transfers[i].transfers) group_transfers[g].push_back({t.start_ns, t.end_ns});
  }
  out.steps.resize(group_transfers.size());
  ParallelFor(group_transfers.size(), threads, [&](size_t g) {
    out.steps[g] = DpActivities(std::move(group_transfers[g]), window_end_ns, tail_guard_steps,
                                options);
  });
  return out;
}

void MeasurePpPairs(std::vector<Pair>* pairs, const std::vector<PairTransfers>& transfers,
                    const DpGroupSteps& groups) {
  for (size_t i = 0; i < pairs->size(); ++i) {
    Pair& p = (*pairs)[i];
    if (p.label != PairLabel::kPp) continue;
    int g = groups.group_of[p.a] >= 0 ? groups.group_of[p.a] : groups.group_of[p.b];
    if (g < 0) continue;
    const auto& acts = groups.steps[g];
    const auto& ts = transfers[i].transfers;
    std::vector<uint32_t> from_a, from_b;
    int vote = 0;
    size_t cursor = 0;
    // Step k runs from the end of DP activity k-1 to the end of DP activity k.
    for (size_t k = 1; k < acts.size(); ++k) {
      while (cursor < ts.size() && ts[cursor].start_ns < acts[k - 1].end_ns) ++cursor;
      uint32_t na = 0, nb = 0;
    bool first = true;
      for (size_t j = cursor; j < ts.size() && ts[j].start_ns < acts[k].end_ns; ++j) {
        if (first) vote += ts[j].from_a ? 1 : -1;
        first = false;
        (ts[j].from_a ? na : nb)++;
      }
      if (na + nb == 0) continue;
      from_a.push_back(na);
      from_b.push_back(nb);
    }
    if (from_a.empty()) continue;
    p.evidence.first_from_a = vote;
    p.evidence.per_step_from_a = MedianU32(from_a);
    p.evidence.per_step_from_b = MedianU32(from_b);
  }
}

}  // namespace prism::analysis
