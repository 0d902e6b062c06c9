#include "diagnosis/rules/dp_group_rule.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "diagnosis/robust_stats.h"

namespace prism::diagnosis {
namespace {

constexpr double kMinSigmaFraction = 0.02;
constexpr double kMinEffect = 0.20;

}  // namespace

std::vector<Finding> FindSlowDpGroups(const RuleContext& rc) {
  std::vector<Finding> out;
  const auto& r = rc.results;
  if (r.dp_group_of.empty()) return out;
  // (job, stage) -> group -> member timelines.
  std::map<std::pair<int, int>, std::map<int, std::vector<const analysis::Timeline*>>> stages;
  for (const auto& t : r.timelines) {
    const int g = t.gpu < r.dp_group_of.size() ? r.dp_group_of[t.gpu] : -1;
    if (g >= 0 && t.stage >= 0) stages[{t.job, t.stage}][g].push_back(&t);
  }
  for (const auto& [key, groups] : stages) {
    if (groups.size() < 3) continue;
    size_t steps = SIZE_MAX;
    for (const auto& [g, members] : groups)
      for (const auto* t : members) steps = std::min(steps, t->steps.size());
    if (steps == 0 || steps == SIZE_MAX) continue;
    std::vector<int> ids;
    std::vector<std::vector<double>> dur;  // [group][step], seconds
    for (const auto& [g, members] : groups) {
      ids.push_back(g);
      std::vector<double> d(steps);
      for (size_t k = 0; k < steps; ++k) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (const auto* t : members) {
          lo = std::min(lo, t->steps[k].dp_start_ns);
          hi = std::max(hi, t->steps[k].dp_end_ns);
        }
        d[k] = hi > lo ? double(hi - lo) / 1e9 : 0;
      }
      dur.push_back(std::move(d));
    }
    std::vector<std::vector<bool>> flagged(ids.size(), std::vector<bool>(steps, false));
    std::vector<double> median(steps), sigma(steps);
    for (size_t k = 0; k < steps; ++k) {
      std::vector<double> v;
      for (const auto& d : dur) v.push_back(d[k]);
      median[k] = Median(v);
      sigma[k] = std::max(RobustSigma(v, median[k]), kMinSigmaFraction * median[k]);
      for (size_t i = 0; i < ids.size(); ++i)
        flagged[i][k] = median[k] > 0 && dur[i][k] > median[k] + rc.options.k * sigma[k] &&
                        dur[i][k] > median[k] * (1 + kMinEffect);
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      for (const Run& run : FlaggedRuns(flagged[i], 1)) {
        if (static_cast<int>(run.flagged) < rc.options.persist_units) continue;
        const auto& members = groups.at(ids[i]);
        Finding f;
        f.kind = FindingKind::kSlowDpGroup;
        f.severity = Severity::kInfo;
        f.job = key.first;
        for (const auto* t : members) f.gpus.push_back(t->gpu);
        const auto& eps = rc.flows.endpoints();
        std::sort(f.gpus.begin(), f.gpus.end(),
                  [&](EndpointId x, EndpointId y) { return eps.Addr(x) < eps.Addr(y); });
        f.start_ns = members.front()->steps[run.first].start_ns;
        f.end_ns = members.front()->steps[run.last].end_ns;
        f.metric = "dp_group_duration_s";
        std::vector<double> vals, base;
        for (size_t k = run.first; k <= run.last; ++k) {
          vals.push_back(dur[i][k]);
          base.push_back(median[k]);
        }
        f.value = Median(vals);
        f.baseline = Median(base);
        f.sigma = sigma[run.first];
        f.units = static_cast<int>(run.flagged);
        f.summary = fmt::format(
            "{}: DP group of {} GPUs (stage {}) takes {:.3f} s per collective vs {:.3f} s for its "
            "stage's other groups, over {} steps",
            r.jobs[key.first].id, f.gpus.size(), key.second, f.value, f.baseline, f.units);
        out.push_back(std::move(f));
      }
    }
  }
  return out;
}

}  // namespace prism::diagnosis
