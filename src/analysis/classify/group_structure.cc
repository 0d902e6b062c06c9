#include "analysis/classify/group_structure.h"

#include <map>

#include "analysis/jobs/union_find.h"

namespace prism::analysis {

namespace {

UnionFind ComponentsOf(const std::vector<Pair>& pairs, size_t num_endpoints,
                       std::initializer_list<PairLabel> labels) {
  UnionFind uf(num_endpoints);
  for (const Pair& p : pairs)
    for (PairLabel l : labels)
      if (p.label == l) uf.Union(p.a, p.b);
  return uf;
}

}  // namespace

size_t SplitTpGroupsAcrossPipelines(std::vector<Pair>* pairs,
                                    const std::vector<PairTransfers>& transfers,
                                    size_t num_endpoints, double min_count_ratio) {
  UnionFind tp = ComponentsOf(*pairs, num_endpoints, {PairLabel::kTp});
  // Per TP component, the most transfers of a pipeline pair with both ends in it: a TP pair of
  // the component below min_count_ratio times that is no denser than a pipeline.
  std::map<uint32_t, size_t> pipeline_in;
  for (size_t i = 0; i < pairs->size(); ++i) {
    const Pair& p = (*pairs)[i];
    if (p.label != PairLabel::kPp || tp.Find(p.a) != tp.Find(p.b)) continue;
    size_t& most = pipeline_in[tp.Find(p.a)];
    most = std::max(most, transfers[i].transfers.size());
  }
  if (pipeline_in.empty()) return 0;
  size_t changed = 0;
  for (size_t i = 0; i < pairs->size(); ++i) {
    Pair& p = (*pairs)[i];
    if (p.label != PairLabel::kTp) continue;
    const auto it = pipeline_in.find(tp.Find(p.a));
    if (it == pipeline_in.end()) continue;
    if (double(transfers[i].transfers.size()) >= min_count_ratio * double(it->second)) continue;
    p.label = PairLabel::kPp;
    p.evidence.rule = "pipeline-between-tp-groups";
    ++changed;
  }
  return changed;
}

size_t RelabelPipelinePairsWithinStages(std::vector<Pair>* pairs, size_t num_endpoints) {
  UnionFind stage = ComponentsOf(*pairs, num_endpoints, {PairLabel::kDp, PairLabel::kTp});
  struct Count {
    size_t within = 0, between = 0;
  };
  std::map<int, Count> per_job;
  for (const Pair& p : *pairs) {
    if (p.label != PairLabel::kPp) continue;
    Count& c = per_job[p.job];
    (stage.Find(p.a) == stage.Find(p.b) ? c.within : c.between)++;
  }
  size_t changed = 0;
  for (Pair& p : *pairs) {
    if (p.label != PairLabel::kPp || stage.Find(p.a) != stage.Find(p.b)) continue;
    const Count& c = per_job[p.job];
    if (c.within >= c.between) continue;
    p.label = PairLabel::kDp;
    p.evidence.rule = "within-stage";
    ++changed;
  }
  return changed;
}

}  // namespace prism::analysis
