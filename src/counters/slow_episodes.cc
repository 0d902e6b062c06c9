#include "counters/slow_episodes.h"

#include <algorithm>
#include <cmath>

#include "diagnosis/robust_stats.h"

namespace prism::counters {

using diagnosis::Median;
using diagnosis::Severity;

ResolutionLimit ComputeResolution(double refresh_s, double poll_p90_s, double median_s,
                                  double sigma_s, double k) {
  ResolutionLimit r;
  r.boundary_s = std::max(refresh_s, poll_p90_s);
  // A boundary is known to within one blur interval (uniform: sigma = blur / sqrt(12)); a duration
  // has two of them.
  r.uncertainty_s = std::max(sigma_s, r.boundary_s / std::sqrt(6.0));
  r.limit_s = std::max({2 * r.boundary_s, k * sigma_s, 0.15 * median_s});
  return r;
}

namespace {

// Iterations' worth of traffic a long interval carries when it is n >= 2 iterations whose
// boundary was not seen: its bytes within a third of an iteration of n, its length within the
// limit of n median steps. Else 1.
int IterationsWorth(const IterationSample& it, double median_s, double limit_s) {
  const double n = std::round(it.work);
  if (n < 2 || std::abs(it.work - n) > 0.34) return 1;
  return it.duration_s <= n * median_s + limit_s ? static_cast<int>(n) : 1;
}

// The cadence of slow occurrences at iteration positions `pos` (counted in iterations' worth, so a
// missed boundary does not shift it): N = the median spacing; it holds when at least
// `rhythm_fit` of the spacings are 1-3 times N exactly (to 5% of N for long cadences: a random
// scatter of slow iterations fits a small N with any tolerance) and most are N itself.
int FindCadence(const std::vector<double>& pos, const EpisodeOptions& options) {
  if (pos.size() < static_cast<size_t>(options.min_rhythm_count)) return 0;
  std::vector<double> gaps;
  for (size_t i = 1; i < pos.size(); ++i) gaps.push_back(pos[i] - pos[i - 1]);
  std::vector<double> sorted = gaps;
  const double n = std::round(Median(sorted));
  if (n < 2) return 0;
  const double tol = std::floor(0.05 * n) + 0.01;
  size_t fit = 0, single = 0;
  for (double g : gaps) {
    const double m = std::round(g / n);
    if (m < 1 || m > 3 || std::abs(g - m * n) > tol) continue;
    ++fit;
    if (m == 1) ++single;
  }
  const double total = static_cast<double>(gaps.size());
  return fit >= options.rhythm_fit * total && single * 2 >= fit ? static_cast<int>(n) : 0;
}

}  // namespace

namespace {

// Marks each iteration: gap, merged (several iterations' worth: `worth`) or normal, with its
// excess over the median; returns which are elevated (candidates for slow).
std::vector<bool> MarkElevated(const std::vector<IterationSample>& iterations, double median_s,
                               const ResolutionLimit& limit, const EpisodeOptions& options,
                               std::vector<int>* worth, EpisodeAnalysis* out) {
  const size_t n = iterations.size();
  // A single iteration is elevated from k times its uncertainty (and 15% of the median): the
  // candidates. Whether they are slow is decided over their span, where boundary errors cancel
  // and a sustained slowdown adds up: a run of iterations each 1.5 s long is 15 s over ten.
  const double elevated_s = std::max(0.15 * median_s, options.k * limit.uncertainty_s);
  std::vector<bool> elevated(n, false);
  for (size_t i = 0; i < n; ++i) {
    const IterationSample& it = iterations[i];
    if (it.gap) {
      out->state[i] = IterationState::kGap;
      continue;
    }
    (*worth)[i] = IterationsWorth(it, median_s, limit.limit_s);
    if ((*worth)[i] > 1) {
      out->state[i] = IterationState::kMerged;
      out->merged += static_cast<size_t>((*worth)[i]);
    }
    out->excess_s[i] = it.duration_s - (*worth)[i] * median_s;
    elevated[i] = out->excess_s[i] > elevated_s;
  }
  // A sustained slowdown: >= min_sustained consecutive iterations each over one uncertainty (and
  // 15%) are candidates too, though none alone is k uncertainties over. Boundary errors cannot
  // do that: a late boundary lengthens one iteration and shortens the next.
  const double sustained_s = std::max(0.15 * median_s, limit.uncertainty_s);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && !iterations[j].gap && out->excess_s[j] > sustained_s) ++j;
    if (j - i >= options.min_sustained)
      for (size_t m = i; m < j; ++m) elevated[m] = true;
    i = j > i ? j : i + 1;
  }
  return elevated;
}

// Candidate episodes: spans of elevated iterations with at most merge_gap others between them
// (no gap), kept when their excess is over the resolution limit.
std::vector<SlowEpisode> CandidateEpisodes(const std::vector<IterationSample>& iterations,
                                           const std::vector<bool>& elevated,
                                           const std::vector<double>& excess_s,
                                           const ResolutionLimit& limit,
                                           const EpisodeOptions& options) {
  const size_t n = iterations.size();
  struct Span {
    size_t first, last;
    int slow;
  };
  std::vector<Span> spans;
  for (size_t i = 0; i < n; ++i) {
    if (!elevated[i]) continue;
    if (!spans.empty() && i - spans.back().last <= options.merge_gap + 1) {
      bool gap_between = false;
      for (size_t j = spans.back().last + 1; j < i; ++j) gap_between |= iterations[j].gap;
      if (!gap_between) {
        spans.back().last = i;
        ++spans.back().slow;
        continue;
      }
    }
    spans.push_back({i, i, 1});
  }
  // A span's excess with one neighbour on each side (when measured): a boundary placed late makes
  // the next iteration short by as much, and the two cancel.
  auto span_excess = [&](const Span& s) {
    double e = 0;
    const size_t lo = s.first > 0 && !iterations[s.first - 1].gap ? s.first - 1 : s.first;
    const size_t hi = s.last + 1 < n && !iterations[s.last + 1].gap ? s.last + 1 : s.last;
    for (size_t j = lo; j <= hi; ++j) e += excess_s[j];
    double inner = 0;
    for (size_t j = s.first; j <= s.last; ++j) inner += excess_s[j];
    return std::min(e, inner);
  };
  std::vector<SlowEpisode> candidates;
  for (const Span& s : spans) {
    const double e = span_excess(s);
    if (e <= limit.limit_s) continue;
    SlowEpisode ep{s.first, s.last, s.slow, e, 0};
    for (size_t j = s.first; j <= s.last; ++j)
      ep.longest_s = std::max(ep.longest_s, iterations[j].duration_s);
    candidates.push_back(ep);
  }
  return candidates;
}

// Rhythm: short candidates (one or two iterations) recurring every N iterations of work. Sets
// `rhythm` when there is one and returns which candidates belong to it.
std::vector<bool> FindRhythm(const std::vector<SlowEpisode>& candidates,
                             const std::vector<int>& worth, double median_s,
                             const ResolutionLimit& limit, const EpisodeOptions& options,
                             std::optional<IterationRhythm>* rhythm) {
  const size_t n = worth.size();
  std::vector<double> position(n + 1, 0);
  for (size_t i = 0; i < n; ++i) position[i + 1] = position[i] + worth[i];
  std::vector<size_t> short_eps;
  std::vector<double> pos;
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (candidates[c].last - candidates[c].first > 1) continue;
    short_eps.push_back(c);
    pos.push_back(position[candidates[c].first]);
  }
  std::vector<bool> in_rhythm(candidates.size(), false);
  const int every = FindCadence(pos, options);
  if (every <= 0) return in_rhythm;
  std::vector<double> extras;
  for (size_t c : short_eps) extras.push_back(candidates[c].extra_s);
  const double typical = Median(extras);
  IterationRhythm r;
  r.every = every;
  r.period_s = every * median_s;
  std::vector<double> kept;
  for (size_t c : short_eps) {
    // An occurrence far costlier than the cadence's typical one is more than the rhythm.
    if (candidates[c].extra_s > 2 * typical + limit.limit_s) continue;
    in_rhythm[c] = true;
    kept.push_back(candidates[c].extra_s);
    if (r.count == 0) r.first = candidates[c].first;
    r.last = candidates[c].last;
    ++r.count;
  }
  r.extra_s = Median(kept);
  const double job_s = position[n] * median_s;
  double total_extra = 0;
  for (double e : kept) total_extra += e;
  r.cost_fraction = job_s > 0 ? total_extra / (job_s + total_extra) : 0;
  if (r.count >= options.min_rhythm_count) *rhythm = r;
  else std::fill(in_rhythm.begin(), in_rhythm.end(), false);
  return in_rhythm;
}

}  // namespace

EpisodeAnalysis FindSlowEpisodes(const std::vector<IterationSample>& iterations, double median_s,
                                 const ResolutionLimit& limit, const EpisodeOptions& options) {
  const size_t n = iterations.size();
  EpisodeAnalysis out;
  out.state.assign(n, IterationState::kNormal);
  out.excess_s.assign(n, 0);
  std::vector<int> worth(n, 1);
  const std::vector<bool> elevated =
      MarkElevated(iterations, median_s, limit, options, &worth, &out);
  const std::vector<SlowEpisode> candidates =
      CandidateEpisodes(iterations, elevated, out.excess_s, limit, options);
  const std::vector<bool> in_rhythm =
      FindRhythm(candidates, worth, median_s, limit, options, &out.rhythm);
  for (size_t c = 0; c < candidates.size(); ++c) {
    const IterationState st = in_rhythm[c] ? IterationState::kRhythm : IterationState::kSlow;
    for (size_t j = candidates[c].first; j <= candidates[c].last; ++j)
      if (elevated[j]) out.state[j] = st;
    if (!in_rhythm[c]) out.episodes.push_back(candidates[c]);
  }
  return out;
}

Severity SeverityOfLoss(double gpu_s, const ImpactOptions& options) {
  if (gpu_s >= options.critical_gpu_s) return Severity::kCritical;
  if (gpu_s >= options.warn_gpu_s) return Severity::kWarning;
  return Severity::kInfo;
}

}  // namespace prism::counters
