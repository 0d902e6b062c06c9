#include "analysis/steps/step_segmenter.h"

#include <algorithm>
#include <cmath>

namespace prism::analysis {
namespace {

// One step of a cut: its start-to-start length and how many bursts it holds.
struct Period {
  double ns;
  size_t bursts;
};

// Working vectors of one thread's calls, kept between calls. Classification segments every pair
// on the analysis threads, and FindStepGapCut judges tens of candidate cuts per series: vectors
// made per call and per candidate were most of the allocations, and with the process on one
// malloc arena (analyze --threads) the threads queued on its lock. Each public function uses its
// own members, so SegmentSteps may call the others.
struct Scratch {
  std::vector<double> xs, before, dev;             // FindBursts, IntervalPrior
  std::vector<size_t> cuts;                        // FindBursts
  std::vector<Activity> singles;                   // SegmentSteps
  std::vector<int64_t> idle_ns;                    // FindStepGapCut
  std::vector<double> log_gap, log_gap_after;      // FindStepGapCut
  std::vector<Period> periods;                     // FindStepGapCut, per candidate
  std::vector<double> period_ns, period_bursts;    // PeriodIrregularity
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Reorders v.
double MedianInPlace(std::vector<double>& v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + v.size() / 2;
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// Prior for log intervals (ns): centred on the series' median with a weak mean (kappa0), and a
// noise scale from the spread around the median, floored: many intervals of a burst are equal
// (clamped to the floor), which would otherwise make every jitter look like a change.
// `dev`: working storage.
NormalGammaPrior IntervalPrior(const std::vector<double>& xs, const StepSegmenterOptions& options,
                               std::vector<double>& dev) {
  NormalGammaPrior prior;
  dev.assign(xs.begin(), xs.end());
  prior.mu0 = MedianInPlace(dev);
  for (size_t i = 0; i < xs.size(); ++i) dev[i] = std::fabs(xs[i] - prior.mu0);
  const double sigma =
      std::clamp(1.4826 * MedianInPlace(dev), options.min_log_sigma, options.max_log_sigma);
  prior.kappa0 = 0.01;
  prior.alpha0 = 1;
  prior.beta0 = sigma * sigma;
  return prior;
}

}  // namespace

void IdleBeforeInto(std::span<const int64_t> start_ns, std::span<const int64_t> end_ns,
                    std::vector<int64_t>& idle) {
  idle.assign(start_ns.size(), 0);
  int64_t latest_end = end_ns.empty() ? 0 : end_ns[0];
  for (size_t i = 1; i < start_ns.size(); ++i) {
    idle[i] = start_ns[i] - latest_end;
    latest_end = std::max(latest_end, end_ns[i]);
  }
}

std::vector<int64_t> IdleBefore(std::span<const int64_t> start_ns, std::span<const int64_t> end_ns) {
  std::vector<int64_t> idle;
  IdleBeforeInto(start_ns, end_ns, idle);
  return idle;
}

std::vector<Activity> FindBursts(std::span<const int64_t> start_ns, std::span<const int64_t> end_ns,
                                 const StepSegmenterOptions& options, uint64_t* bocd_points) {
  std::vector<Activity> bursts;
  const size_t n = start_ns.size();
  if (n == 0) return bursts;
  // xs[k] is the log idle time before transfer k + 1: from the latest end so far to its start.
  // Idle time, not start-to-start: a long transfer (a congested bucket) is activity, not a gap.
  Scratch& scratch = ThreadScratch();
  std::vector<double>& xs = scratch.xs;
  xs.resize(n - 1);
  int64_t latest_end = end_ns[0];
  for (size_t k = 0; k + 1 < n; ++k) {
    xs[k] = std::log(double(std::max(options.min_interval_ns, start_ns[k + 1] - latest_end)));
    latest_end = std::max(latest_end, end_ns[k + 1]);
  }

  std::vector<size_t>& cuts = scratch.cuts;  // transfer indices that begin a burst (besides 0)
  cuts.clear();
  if (!xs.empty()) {
    BocdOptions bocd = options.bocd;
    bocd.prior = IntervalPrior(xs, options, scratch.dev);
    bocd.max_run_lengths = options.max_run_lengths;
    BocdDetector detector(bocd);
    LaggedChangeRule rule(bocd.lag, bocd.threshold);
    const size_t w = static_cast<size_t>(bocd.lag);
    size_t seg_begin = 0;  // first xs index fed since the last reset
    std::vector<double>& before = scratch.before;  // the intervals of the burst before a detection
    uint64_t fed = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
      detector.Step(xs[k]);
      ++fed;
      auto start = rule.Observe(detector);
      if (!start) continue;
      // The change starts at xs index seg_begin + *start; place the cut on the largest interval
      // within the lag window around it.
      size_t s = seg_begin + *start;
      size_t lo = s > w ? s - w : 0, hi = std::min(xs.size() - 1, s + w);
      lo = std::max(lo, seg_begin);
      size_t best = lo;
      for (size_t i = lo; i <= hi; ++i)
        if (xs[i] > xs[best]) best = i;
      before.assign(xs.begin() + seg_begin, xs.begin() + best);
      double typical = before.empty() ? -INFINITY : MedianInPlace(before);
      if (before.empty() || xs[best] - typical < std::log(options.min_cut_ratio)) continue;
      cuts.push_back(best + 1);
      // Restart on the points after the cut; re-feed those already consumed.
      seg_begin = best + 1;
      detector.Reset();
      rule.Reset();
      k = best;  // the loop's ++k feeds xs[best + 1] next
    }
    if (bocd_points != nullptr) *bocd_points += fed;
  }
  size_t first = 0;
  cuts.push_back(n);
  for (size_t c : cuts) {
    if (c <= first) continue;
    Activity a{first, c - 1, start_ns[first], start_ns[first]};
    for (size_t i = first; i < c; ++i) a.end_ns = std::max(a.end_ns, end_ns[i]);
    bursts.push_back(a);
    first = c;
  }
  return bursts;
}

namespace {

// log of the gap after each burst but the last (at least 1 ns), into `log_gap`: what
// PeriodsAtBurstGaps compares with each candidate threshold, taken once per series.
void LogGapsAfterBursts(const std::vector<Activity>& bursts, std::vector<double>& log_gap) {
  log_gap.resize(bursts.size() - 1);
  for (size_t i = 0; i + 1 < bursts.size(); ++i)
    log_gap[i] = std::log(double(std::max<int64_t>(1, bursts[i + 1].start_ns - bursts[i].end_ns)));
}

// The steps of the cut at gaps between bursts above exp(log_threshold), the tail last, into
// `periods`. `log_gap_after`: LogGapsAfterBursts(bursts).
const std::vector<Period>& PeriodsAtBurstGaps(const std::vector<Activity>& bursts,
                                              const std::vector<double>& log_gap_after,
                                              double log_threshold, std::vector<Period>& periods) {
  periods.clear();
  int64_t step_start = bursts[0].start_ns;
  size_t first_burst = 0;
  for (size_t i = 0; i + 1 < bursts.size(); ++i) {
    if (log_gap_after[i] <= log_threshold) continue;
    periods.push_back({double(bursts[i + 1].start_ns - step_start), i + 1 - first_burst});
    step_start = bursts[i + 1].start_ns;
    first_burst = i + 1;
  }
  int64_t series_end = 0;
  for (const Activity& b : bursts) series_end = std::max(series_end, b.end_ns);
  periods.push_back({double(series_end - step_start), bursts.size() - first_burst});
  return periods;
}

// The steps of the cut as the final pass of SegmentSteps makes it, at every transfer whose idle
// time exceeds exp(log_threshold) (`idle_ns`: IdleBefore), the tail last, into `periods`.
const std::vector<Period>& PeriodsAtIdleGaps(const std::vector<Activity>& bursts,
                                             std::span<const int64_t> start_ns,
                                             std::span<const int64_t> end_ns,
                                             const std::vector<int64_t>& idle_ns,
                                             double log_threshold, std::vector<Period>& periods) {
  const int64_t threshold_ns = static_cast<int64_t>(std::exp(log_threshold));
  // Bursts that begin among transfers [0, i): bursts are in transfer order.
  auto bursts_before = [&](size_t i) {
    return size_t(std::lower_bound(bursts.begin(), bursts.end(), i,
                                   [](const Activity& b, size_t x) { return b.first < x; }) -
                  bursts.begin());
  };
  periods.clear();
  size_t step_first = 0;
  for (size_t i = 1; i < start_ns.size(); ++i) {
    if (idle_ns[i] <= threshold_ns) continue;
    periods.push_back({double(start_ns[i] - start_ns[step_first]),
                       std::max<size_t>(1, bursts_before(i) - bursts_before(step_first))});
    step_first = i;
  }
  const int64_t series_end = *std::max_element(end_ns.begin(), end_ns.end());
  periods.push_back({double(series_end - start_ns[step_first]),
                     std::max<size_t>(1, bursts.size() - bursts_before(step_first))});
  return periods;
}

// How irregular the steps of a cut are (`periods`, the tail last): the larger of q90 / median
// and median / q10 of their start-to-start periods (1 = all equal); infinity for fewer than 3
// steps. Quantiles, not a spread around the median: a cut at a collective's buckets makes most
// periods short and alike, with the step gap's long periods a minority that a median deviation
// would not see.
// Infinity too when the cut leaves a quarter of the series in stretches that look like several
// steps run together: longer than `max_irregularity` median periods and holding at least three
// times the median period's bursts. A cut that only the gaps of a slow spell pass (a degraded
// link stretching steps and their idle gaps for half a window) is regular within the spell and
// leaves the busy rest of the series uncut; a long pause (a checkpoint, the wait before the first
// step) is long but not busy.
// `ns`, `counts`: working storage.
double PeriodIrregularity(const std::vector<Period>& periods, double max_irregularity,
                          std::vector<double>& ns, std::vector<double>& counts) {
  if (periods.size() < 4) return INFINITY;  // fewer than 3 steps besides the tail
  ns.clear();
  counts.clear();
  double series_ns = 0;
  for (size_t i = 0; i < periods.size(); ++i) {
    series_ns += periods[i].ns;
    if (i + 1 == periods.size()) break;  // the tail is no whole step
    ns.push_back(periods[i].ns);
    counts.push_back(double(periods[i].bursts));
  }
  // The three order statistics by selection, not a sort (this runs once per candidate cut).
  const size_t n = ns.size(), mid = n / 2, lo = n / 10, hi = n - 1 - n / 10;
  std::nth_element(ns.begin(), ns.begin() + mid, ns.end());
  const double median = ns[mid];
  if (lo < mid) std::nth_element(ns.begin(), ns.begin() + lo, ns.begin() + mid);
  if (hi > mid) std::nth_element(ns.begin() + mid + 1, ns.begin() + hi, ns.end());
  const double q10 = ns[lo], q90 = ns[hi];
  if (q10 <= 0) return INFINITY;
  const double median_bursts = MedianInPlace(counts);
  double run_together_ns = 0;
  for (const Period& p : periods)
    if (p.ns > median * max_irregularity && double(p.bursts) >= 3 * median_bursts)
      run_together_ns += p.ns;
  if (run_together_ns * 4 > series_ns) return INFINITY;
  return std::max(q90 / median, median / q10);
}

}  // namespace

StepGapCut FindStepGapCut(const std::vector<Activity>& bursts, std::span<const int64_t> start_ns,
                          std::span<const int64_t> end_ns, const StepSegmenterOptions& options) {
  if (bursts.size() < 2) return {};
  Scratch& scratch = ThreadScratch();
  std::vector<int64_t>& idle_ns = scratch.idle_ns;
  if (options.judge_cut_on_transfers) IdleBeforeInto(start_ns, end_ns, idle_ns);
  // The gaps' logs clamped at min_interval_ns, sorted. Most gaps are above both clamps, and
  // their log is the one LogGapsAfterBursts took: reused, as is the clamp's own log (with the
  // jump's log per candidate below, 1.5% of a whole run's instructions: callgrind, scale-10k).
  std::vector<double>& log_gap_after = scratch.log_gap_after;
  LogGapsAfterBursts(bursts, log_gap_after);
  const double log_min_interval = std::log(double(options.min_interval_ns));
  std::vector<double>& log_gap = scratch.log_gap;
  log_gap.resize(bursts.size() - 1);
  for (size_t i = 0; i + 1 < bursts.size(); ++i) {
    const int64_t gap = bursts[i + 1].start_ns - bursts[i].end_ns;
    const int64_t clamped = std::max(options.min_interval_ns, gap);
    log_gap[i] = clamped == std::max<int64_t>(1, gap)     ? log_gap_after[i]
                 : clamped == options.min_interval_ns ? log_min_interval
                                                      : std::log(double(clamped));
  }
  std::sort(log_gap.begin(), log_gap.end());
  auto irregularity = [&](const std::vector<Period>& periods) {
    return PeriodIrregularity(periods, options.max_period_irregularity, scratch.period_ns,
                              scratch.period_bursts);
  };
  // Candidate thresholds: every jump of at least the ratio between sorted gaps. Gaps often come
  // in more than two classes (a collective's chunks, its buckets between backward layers, waits
  // for other rings, the optimizer, the step gap): the lowest candidate that cuts the series into
  // regular steps wins, so buckets are not taken for steps and a rare longer pause (a checkpoint)
  // is not taken for the step gap. Without a regular cut, the most regular one.
  // Candidates are tried from the lowest up, and the first regular one is the answer: the most
  // regular cut counts only when none is regular, so the search stops there (few series have
  // candidates above their regular cut: 0.05% of a run's instructions, callgrind, faults seed 1).
  double regular = NAN, most_regular = NAN, best_spread = INFINITY;
  auto consider = [&](double min_jump, double above, bool keep_most_regular) {
    const double log_min_jump = std::log(min_jump);
    for (size_t i = 0; i + 1 < log_gap.size() && std::isnan(regular); ++i) {
      const double jump = log_gap[i + 1] - log_gap[i];
      if (jump < log_min_jump) continue;
      const double t = (log_gap[i] + log_gap[i + 1]) / 2;
      if (t <= above) continue;
      // Judged on the gaps between bursts, and as the final pass cuts: a step gap the burst
      // detector ran over (finer records give it more, shorter intervals to learn from) still
      // ends a step, and without it a regular cut can look irregular. The second judgement only
      // where the first did not find the cut regular: it could only lower the spread.
      double spread =
          irregularity(PeriodsAtBurstGaps(bursts, log_gap_after, t, scratch.periods));
      if (options.judge_cut_on_transfers && spread > options.max_period_irregularity)
        spread = std::min(spread, irregularity(PeriodsAtIdleGaps(bursts, start_ns, end_ns,
                                                                 idle_ns, t, scratch.periods)));
      if (spread <= options.max_period_irregularity) regular = t;
      if (keep_most_regular && spread < best_spread) {
        best_spread = spread;
        most_regular = t;
      }
    }
  };
  consider(options.min_step_gap_ratio, -INFINITY, true);
  // Gaps that shade into each other: ZeRO-3 / FSDP gathers parameters layer by layer in the
  // forward and reduce-scatters gradients layer by layer in the backward, so the step's DP traffic
  // has gaps of every length from a layer's compute to the forward's, and no class above the
  // collectives' own stands 3x apart. A smaller jump above the most regular cut so far that cuts
  // regular steps is the step gap. Only above it: steps slowed for a while (a degraded link) make
  // the true cut irregular, and a finer one could then look regular by chance.
  if (std::isnan(regular))
    consider(options.min_regular_gap_ratio,
             std::isnan(most_regular) ? -INFINITY : most_regular, false);
  const bool found_regular = !std::isnan(regular);
  double threshold = !std::isnan(regular) ? regular : most_regular;
  // No two classes: every gap between bursts is a step gap.
  if (std::isnan(threshold)) threshold = log_gap.front() - std::log(options.min_step_gap_ratio) / 2;
  return {static_cast<int64_t>(std::exp(threshold)), found_regular};
}

std::vector<Activity> SegmentSteps(std::span<const int64_t> start_ns,
                                   std::span<const int64_t> end_ns,
                                   const StepSegmenterOptions& options,
                                   std::vector<Activity>* bursts_out, uint64_t* bocd_points) {
  std::vector<Activity> steps;
  if (bursts_out != nullptr) bursts_out->clear();
  if (start_ns.empty()) return steps;
  std::vector<Activity>& singles = ThreadScratch().singles;
  singles.clear();
  auto single_transfers = [&] {
    for (size_t i = 0; i < start_ns.size(); ++i) singles.push_back({i, i, start_ns[i], end_ns[i]});
    return FindStepGapCut(singles, start_ns, end_ns, options);
  };
  StepGapCut cut;
  if (options.bursts_only_if_gaps_irregular) cut = single_transfers();
  if (!cut.regular) {
    const std::vector<Activity> bursts = FindBursts(start_ns, end_ns, options, bocd_points);
    if (bursts_out != nullptr) *bursts_out = bursts;
    if (bursts.size() >= 2)
      cut = FindStepGapCut(bursts, start_ns, end_ns, options);
    else if (singles.empty())
      cut = single_transfers();  // the detector saw one regime: judge the single transfers' gaps
  }
  const int64_t threshold = cut.threshold_ns;
  Activity cur{0, 0, start_ns[0], end_ns[0]};
  for (size_t i = 1; i < start_ns.size(); ++i) {
    if (start_ns[i] - cur.end_ns > threshold) {
      steps.push_back(cur);
      cur = Activity{i, i, start_ns[i], end_ns[i]};
      continue;
    }
    cur.last = i;
    cur.end_ns = std::max(cur.end_ns, end_ns[i]);
  }
  steps.push_back(cur);
  return steps;
}

}  // namespace prism::analysis
