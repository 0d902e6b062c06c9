#include "analysis/layout/layout_inference.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "analysis/jobs/union_find.h"

namespace prism::analysis {
namespace {

template <typename T>
T Mode(const std::vector<T>& values, T fallback) {
  std::map<T, size_t> counts;
  for (const T& v : values) ++counts[v];
  T best = fallback;
  size_t best_n = 0;
  for (const auto& [v, n] : counts)
    if (n > best_n) best = v, best_n = n;
  return best;
}

struct PpEdge {
  EndpointId other;
  double vote;  // > 0: forward is (this -> other)
  uint32_t forward_per_step_this_to_other;
  uint32_t forward_per_step_other_to_this;
};

}  // namespace

int GpusPerHost(const Job& job, const EndpointContext& ctx) {
  std::map<int, int> per_host;
  for (EndpointId g : job.gpus) ++per_host[ctx.host[g]];
  std::vector<int> sizes;
  for (auto [h, n] : per_host) sizes.push_back(n);
  return Mode(sizes, 1);
}

int InferTensorParallel(const std::vector<Pair>& pairs, PairIndices job_pairs,
                        const EndpointContext& ctx, const Job& job) {
  const int g = GpusPerHost(job, ctx);
  std::vector<int> votes;
  for (uint32_t i : job_pairs) {
    const Pair& p = pairs[i];
    if (p.label != PairLabel::kDp || p.evidence.bidirectional) continue;
    if (ctx.host[p.a] == ctx.host[p.b] || ctx.local_gpu[p.a] < 0 || ctx.local_gpu[p.b] < 0) continue;
    // Data direction of a ring edge: the side that sends.
    const bool a_sends = p.evidence.bytes_from_a >= p.evidence.bytes_from_b;
    const int from = ctx.local_gpu[a_sends ? p.a : p.b], to = ctx.local_gpu[a_sends ? p.b : p.a];
    const int offset = ((from - to) % g + g) % g;
    votes.push_back(g - offset);
  }
  return std::max(1, votes.empty() ? g : Mode(votes, g));
}

int CrossHostTensorParallel(const std::vector<Pair>& pairs, PairIndices job_pairs) {
  // The job's TP endpoints numbered 0, 1, ... in order of appearance: sets over them, not over
  // every endpoint of the window for each job.
  std::map<EndpointId, uint32_t> member;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (uint32_t i : job_pairs) {
    const Pair& p = pairs[i];
    if (p.label != PairLabel::kTp) continue;
    const uint32_t a = member.try_emplace(p.a, uint32_t(member.size())).first->second;
    const uint32_t b = member.try_emplace(p.b, uint32_t(member.size())).first->second;
    edges.push_back({a, b});
  }
  if (member.empty()) return 1;
  UnionFind uf(member.size());
  for (auto [a, b] : edges) uf.Union(a, b);
  std::map<uint32_t, int> size_of;
  for (const auto& [e, m] : member) ++size_of[uf.Find(m)];
  std::vector<int> sizes;
  for (auto [root, n] : size_of) sizes.push_back(n);
  return Mode(sizes, 1);
}

namespace {

// A path of the PP graph, walked from one end.
struct Walk {
  std::vector<EndpointId> path;
  double vote = 0;  // > 0: forward runs along the walk
  std::vector<uint32_t> along, against;  // forward transfers per step along / against it
};

// PP paths: components of the PP graph, walked from an end.
std::vector<Walk> WalkPpPaths(std::map<EndpointId, std::vector<PpEdge>>& pp) {
  std::set<EndpointId> seen;
  std::vector<Walk> walks;
  for (const auto& [start, edges] : pp) {
    if (seen.count(start) || edges.size() != 1) continue;  // start at path ends only
    Walk w;
    w.path.push_back(start);
    seen.insert(start);
    EndpointId cur = start;
    while (true) {
      const PpEdge* next = nullptr;
      for (const PpEdge& e : pp[cur])
        if (!seen.count(e.other)) next = &e;
      if (next == nullptr) break;
      w.vote += next->vote;
      w.along.push_back(next->forward_per_step_this_to_other);
      w.against.push_back(next->forward_per_step_other_to_this);
      cur = next->other;
      w.path.push_back(cur);
      seen.insert(cur);
    }
    walks.push_back(std::move(w));
  }
  return walks;
}

// The walks as paths from the first stage to the last; each path's forward transfers per step
// appended to `microbatch_votes`.
std::vector<std::vector<EndpointId>> OrientWalks(std::vector<Walk> walks,
                                                 const EndpointContext& ctx,
                                                 std::vector<uint32_t>* microbatch_votes) {
  // One job runs one pipeline: paths that start and end on the same two hosts (the TP ranks and
  // DP replicas of a stage share its hosts) run the same way, so they are oriented by their
  // summed votes. A path whose own steps were cut wrong (the DP boundaries of a two-phase DP
  // group) would otherwise come out reversed and mix two stages.
  std::map<std::pair<int, int>, double> ends_vote;  // (lower host, higher host) -> summed vote
  auto ends_of = [&](const Walk& w) {
    const int first = ctx.host[w.path.front()], last = ctx.host[w.path.back()];
    return std::make_tuple(std::min(first, last), std::max(first, last), first <= last);
  };
  for (const Walk& w : walks) {
    const auto [lo, hi, ascending] = ends_of(w);
    if (lo != hi) ends_vote[{lo, hi}] += ascending ? w.vote : -w.vote;
  }
  std::vector<std::vector<EndpointId>> paths;
  for (Walk& w : walks) {
    const auto [lo, hi, ascending] = ends_of(w);
    double vote = w.vote;
    if (lo != hi && ends_vote[{lo, hi}] != 0) vote = ascending ? ends_vote[{lo, hi}] : -ends_vote[{lo, hi}];
    if (vote < 0) {
      std::reverse(w.path.begin(), w.path.end());
      std::swap(w.along, w.against);
    }
    for (uint32_t m : w.along) microbatch_votes->push_back(m);
    paths.push_back(std::move(w.path));
  }
  return paths;
}

// Each GPU's stage: its place on a path of the usual length; GPUs without PP traffic of their own
// join the stage of their host (a host holds one stage when tp * dp-ranks-per-host fill it).
// Without paths, every GPU is stage 0.
void AssignStages(const std::vector<std::vector<EndpointId>>& paths, const EndpointContext& ctx,
                  Job* job, std::vector<int>* stage_of) {
  Layout& layout = job->layout;
  if (paths.empty()) {
    for (EndpointId g : job->gpus) (*stage_of)[g] = 0;
    layout.stages[0] = job->gpus;
    return;
  }
  for (const auto& p : paths) {
    if (static_cast<int>(p.size()) != layout.pp) continue;
    for (size_t s = 0; s < p.size(); ++s) (*stage_of)[p[s]] = static_cast<int>(s);
  }
  std::map<int, std::map<int, int>> host_stage_votes;
  for (EndpointId g : job->gpus)
    if ((*stage_of)[g] >= 0) ++host_stage_votes[ctx.host[g]][(*stage_of)[g]];
  for (EndpointId g : job->gpus) {
    if ((*stage_of)[g] >= 0) continue;
    auto it = host_stage_votes.find(ctx.host[g]);
    if (it != host_stage_votes.end() && it->second.size() == 1)
      (*stage_of)[g] = it->second.begin()->first;
  }
  for (EndpointId g : job->gpus)
    if ((*stage_of)[g] >= 0) layout.stages[(*stage_of)[g]].push_back(g);
}

}  // namespace

void InferLayout(const std::vector<Pair>& pairs, PairIndices job_pairs, const EndpointTable& endpoints,
                 const EndpointContext& ctx, Job* job, std::vector<int>* stage_of) {
  Layout& layout = job->layout;
  const int tp = layout.tp;
  layout = Layout{};
  layout.tp = tp;
  for (EndpointId g : job->gpus) (*stage_of)[g] = -1;

  std::map<EndpointId, std::vector<PpEdge>> pp;
  for (uint32_t i : job_pairs) {
    const Pair& p = pairs[i];
    if (p.label != PairLabel::kPp) continue;
    const PairEvidence& ev = p.evidence;
    const double vote = ev.first_from_a != 0 ? ev.first_from_a : ev.lead_a;
    pp[p.a].push_back({p.b, vote, ev.per_step_from_a, ev.per_step_from_b});
    pp[p.b].push_back({p.a, -vote, ev.per_step_from_b, ev.per_step_from_a});
  }

  std::vector<uint32_t> microbatch_votes;
  const std::vector<std::vector<EndpointId>> paths =
      OrientWalks(WalkPpPaths(pp), ctx, &microbatch_votes);
  // Cycles or branches (no clean end) leave GPUs unplaced; they make the layout inconsistent.
  std::vector<int> lengths;
  for (const auto& p : paths) lengths.push_back(static_cast<int>(p.size()));
  layout.pp = paths.empty() ? 1 : Mode(lengths, 1);
  layout.stages.assign(layout.pp, {});
  AssignStages(paths, ctx, job, stage_of);
  for (auto& stage : layout.stages)
    std::sort(stage.begin(), stage.end(),
              [&](EndpointId x, EndpointId y) { return endpoints.Addr(x) < endpoints.Addr(y); });

  layout.dp = static_cast<int>(layout.stages[0].size()) / layout.tp;
  layout.microbatches = static_cast<int>(Mode(microbatch_votes, uint32_t{0}));
  size_t placed = 0;
  bool equal_stages = true;
  for (const auto& s : layout.stages) {
    placed += s.size();
    equal_stages &= s.size() == layout.stages[0].size();
  }
  layout.consistent = equal_stages && placed == job->gpus.size() &&
                      size_t(layout.dp) * layout.pp * layout.tp == job->gpus.size();
}

}  // namespace prism::analysis
