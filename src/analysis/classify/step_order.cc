#include "analysis/classify/step_order.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "analysis/parallel_for.h"
#include "analysis/steps/dp_group_steps.h"

namespace prism::analysis {

WindowOrder MeasureOrderInWindows(const std::vector<Transfer>& ts,
                                  const std::vector<int64_t>& step_ends) {
  WindowOrder out;
  size_t first = 0;
  for (size_t k = 1; k < step_ends.size(); ++k) {
    while (first < ts.size() && ts[first].start_ns < step_ends[k - 1]) ++first;
    size_t last = first;
    while (last < ts.size() && ts[last].start_ns < step_ends[k]) ++last;
    if (last == first) continue;
    const Activity step{first, last - 1, ts[first].start_ns, 0};
    const StepOrder order = MeasureStepOrder(ts, std::span(&step, 1));
    out.both_way += order.both_way_steps;
    out.ordered_from_a += order.ordered_from_a;
    first = last;
  }
  return out;
}

double PeriodIrregularity(const std::vector<int64_t>& step_ends) {
  if (step_ends.size() < 4) return INFINITY;
  std::vector<double> periods;
  for (size_t k = 1; k < step_ends.size(); ++k) periods.push_back(double(step_ends[k] - step_ends[k - 1]));
  std::sort(periods.begin(), periods.end());
  const size_t n = periods.size();
  const double q10 = periods[n / 10], median = periods[n / 2], q90 = periods[n - 1 - n / 10];
  if (q10 <= 0) return INFINITY;
  return std::max(q90 / median, median / q10);
}

namespace {

// DP and PP pairs only: a TP pair was told from both by when and how often it runs
// (classify/tensor_parallel.h), which order within a step does not overrule.
bool Reconsidered(const Pair& p, const PairTransfers& t) {
  return p.evidence.bidirectional && (p.label == PairLabel::kDp || p.label == PairLabel::kPp) &&
         t.transfers.size() >= 4;
}

}  // namespace

namespace {

// The DP groups' steps that pairs are measured against. Only groups with regular steps are
// references: a group whose activities are not whole steps (cut at waits inside its collective,
// or merged over several steps) says nothing about order.
struct OrderReferences {
  const DpGroupSteps* groups = nullptr;
  std::vector<std::vector<int64_t>> ends;  // per group: its activities' ends
  std::vector<bool> regular;               // per group
  std::vector<size_t> group_pairs;         // per group: its DP pairs
  // Per job: the group with the most DP pairs, and the regular group with the most. A pipeline
  // pair taken for DP joins the DP groups of two stages into one whose activities interleave
  // (irregular), and that group can be the job's main group; every group of a job steps
  // together, so a regular one still says.
  std::vector<int> main_group, main_regular;

  // The groups a pair is measured against: its endpoints' groups and the job's main groups, each
  // unless the pair is that group's only pair (a pair cannot be its own reference).
  // At most four, in place: pairs are judged on several threads, and allocations on every
  // thread queue on the one malloc arena (docs/design.md, Threads).
  struct Groups {
    std::array<int, 4> g{};
    size_t n = 0;
    const int* begin() const { return g.data(); }
    const int* end() const { return g.data() + n; }
  };
  Groups For(const Pair& p) const {
    Groups out;
    const bool known_job = p.job >= 0 && size_t(p.job) < main_group.size();
    const int job_main = known_job ? main_group[size_t(p.job)] : -1;
    const int job_regular = known_job ? main_regular[size_t(p.job)] : -1;
    for (int g : {groups->group_of[p.a], groups->group_of[p.b], job_main, job_regular}) {
      if (g < 0 || !regular[size_t(g)] || std::find(out.begin(), out.end(), g) != out.end())
        continue;
      const bool own = p.label == PairLabel::kDp && groups->group_of[p.a] == g;
      if (group_pairs[size_t(g)] > (own ? 1u : 0u)) out.g[out.n++] = g;
    }
    return out;
  }
};

// Per job, the group of `keep` with the most DP pairs (-1 for none).
std::vector<int> LargestGroupPerJob(const std::vector<int>& group_job,
                                    const std::vector<size_t>& group_pairs, size_t jobs,
                                    const std::vector<bool>& keep) {
  std::vector<int> best_of(jobs, -1);
  for (size_t g = 0; g < group_job.size(); ++g) {
    const int j = group_job[g];
    if (j < 0 || !keep[g]) continue;
    int& best = best_of[size_t(j)];
    if (best < 0 || group_pairs[g] > group_pairs[size_t(best)]) best = int(g);
  }
  return best_of;
}

OrderReferences MakeOrderReferences(const std::vector<Pair>& pairs, const DpGroupSteps& groups,
                                    const std::vector<int>& job_of,
                                    const StepOrderOptions& options) {
  const size_t num_groups = groups.steps.size();
  OrderReferences refs;
  refs.groups = &groups;
  refs.group_pairs.assign(num_groups, 0);
  std::vector<int> group_job(num_groups, -1);
  for (const Pair& p : pairs) {
    if (p.label != PairLabel::kDp) continue;
    const int g = groups.group_of[p.a];
    ++refs.group_pairs[size_t(g)];
    group_job[size_t(g)] = p.job;
  }
  refs.ends.resize(num_groups);
  refs.regular.resize(num_groups);
  for (size_t g = 0; g < num_groups; ++g) {
    for (const Activity& a : groups.steps[g]) refs.ends[g].push_back(a.end_ns);
    refs.regular[g] = PeriodIrregularity(refs.ends[g]) <= options.max_reference_irregularity;
  }
  int max_job = -1;
  for (int j : job_of) max_job = std::max(max_job, j);
  const size_t jobs = size_t(max_job + 1);
  refs.main_group = LargestGroupPerJob(group_job, refs.group_pairs, jobs,
                                       std::vector<bool>(num_groups, true));
  refs.main_regular = LargestGroupPerJob(group_job, refs.group_pairs, jobs, refs.regular);
  return refs;
}

// A reconsidered pair's label from its order within the references' steps: `*label` is left as
// it is when they do not say, or when the pair's own steps already show it ordered.
void JudgeOrder(Pair* p, const PairTransfers& t, const OrderReferences& refs,
                const StepOrderOptions& options, PairLabel* label) {
  // A pipeline pair is ordered within the steps of any group whose activities are whole steps;
  // a group cut in pieces (two-phase DP, a missed gap) spoils the test, so the best reference
  // counts. A collective is ordered within none.
  double share = -1;
  for (int g : refs.For(*p)) {
    const std::vector<int64_t>& ends = refs.ends[size_t(g)];
    if (ends.size() < options.min_steps + 1) continue;
    const WindowOrder order = MeasureOrderInWindows(t.transfers, ends);
    if (order.both_way < options.min_steps) continue;
    share = std::max(share, double(std::abs(order.ordered_from_a)) / double(order.both_way));
  }
  if (share < 0) return;
  p->evidence.step_ordered_share = share;
  const PairEvidence& ev = p->evidence;
  if (ev.both_way_steps >= options.min_own_steps &&
      double(ev.ordered_steps) >= options.own_ordered_share * double(ev.both_way_steps))
    return;
  if (share >= options.min_ordered_share) {
    *label = PairLabel::kPp;
    p->evidence.rule = "ordered-in-steps";
  } else if (share <= options.max_unordered_share) {
    *label = PairLabel::kDp;
    p->evidence.rule = "unordered-in-steps";
  }  // in between, the steps found so far do not say: the first pass's label stands
}

}  // namespace

size_t RefineByStepOrder(std::vector<Pair>* pairs, const std::vector<PairTransfers>& transfers,
                         const EndpointContext& ctx, const std::vector<int>& job_of,
                         const std::vector<int>& tp_of_job, int64_t window_end_ns,
                         const StepSegmenterOptions& steps, const StepOrderOptions& options,
                         int threads) {
  const DpGroupSteps groups = FindDpGroupSteps(*pairs, transfers, ctx, job_of, tp_of_job,
                                               window_end_ns, /*tail_guard_steps=*/0, steps,
                                               threads);
  if (groups.steps.empty()) return 0;
  const OrderReferences refs = MakeOrderReferences(*pairs, groups, job_of, options);
  // Labels change only once every pair is judged: references were chosen by the first labels.
  std::vector<PairLabel> label(pairs->size());
  for (size_t i = 0; i < pairs->size(); ++i) label[i] = (*pairs)[i].label;
  ParallelForInChunks(pairs->size(), threads, kPairsPerChunk, [&](size_t i) {
    if (Reconsidered((*pairs)[i], transfers[i]))
      JudgeOrder(&(*pairs)[i], transfers[i], refs, options, &label[i]);
  });
  size_t changed = 0;
  for (size_t i = 0; i < pairs->size(); ++i) {
    if ((*pairs)[i].label != label[i]) ++changed;
    (*pairs)[i].label = label[i];
  }
  return changed;
}

}  // namespace prism::analysis
