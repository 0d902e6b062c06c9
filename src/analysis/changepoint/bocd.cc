#include "analysis/changepoint/bocd.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>

#include "analysis/changepoint/vec_math.h"
#include "core/status.h"

namespace prism::analysis {

BocdDetector::BocdDetector(const BocdOptions& opts)
    : opts_(opts),
      hazard_{opts.hazard},
      // Masses below DBL_MIN are always dropped so the evidence of the next step cannot underflow.
      floor_(std::max(opts.prune_mass, DBL_MIN)),
      runs_(opts.prior) {
  PRISM_CHECK(opts.hazard > 0 && opts.hazard < 1);
  PRISM_CHECK(opts.lag >= 1);
  PRISM_CHECK(opts.max_run_lengths != 1);
  PRISM_CHECK(opts.prune_mass >= 0 && opts.prune_mass < 1);
  if (opts.max_run_lengths != 0) {
    // One extra run: a step grows the set by one before pruning.
    const size_t padded = NormalGammaRuns::RoundUp(opts.max_run_lengths + 1) + 1;
    posterior_.reserve(padded);
    next_.reserve(padded);
    keep_.reserve(padded);
    select_.reserve(padded);
  }
  Reset();
}

void BocdDetector::Reset() {
  runs_.Reset();
  // Step zeroes the padding it reads; only the size needs to be right here.
  if (posterior_.size() < NormalGammaRuns::kLanes + 1) posterior_.resize(NormalGammaRuns::kLanes + 1);
  posterior_[0] = 1.0;  // P(r_0 = 0) = 1: a segment starts with the first observation
  t_ = 0;
}

namespace {

// Growth weights, scaled by the largest log density so nothing overflows:
// out[i + 1] = in[i] exp(log_pdf[i + 1] - max_log_pdf) for i in [0, padded); returns their sum,
// accumulated per lane and then added in a fixed order, so every x86-64 gets the same bits.
__attribute__((target_clones("avx2", "default"))) double WeighGrowth(size_t padded,
                                                                     double max_log_pdf,
                                                                     const double* log_pdf,
                                                                     const double* in,
                                                                     double* out) {
  using namespace vec;
  V4d sum = Splat(0);
  for (size_t i = 0; i < padded; i += NormalGammaRuns::kLanes) {
    const V4d e = Load(in + i) * Exp4(Load(log_pdf + i + 1) - max_log_pdf);
    sum += e;
    Store(out + i + 1, e);
  }
  return (sum[0] + sum[1]) + (sum[2] + sum[3]);
}

}  // namespace

std::span<const double> BocdDetector::Step(double x) {
  PRISM_CHECK(std::isfinite(x));
  const size_t n = runs_.size();
  const size_t padded = NormalGammaRuns::RoundUp(n);
  if (posterior_.size() < padded + 1) posterior_.resize(padded + 1, 0.0);
  if (next_.size() < padded + 1) next_.resize(padded + 1, 0.0);
  const double* p = posterior_.data();
  double* q = next_.data();
  std::fill(posterior_.data() + n, posterior_.data() + padded, 0.0);  // padding weighs nothing

  // Growth: P(r_t = r + 1) ∝ P(r_{t-1} = r) p(x_t | run r) (1 - H). Change: P(r_t = 0) ∝ H times
  // the sum of the same terms (constant hazard), scaled by the largest predictive density.
  const double max_log_pdf = runs_.ObserveAndGrow(x);
  const double evidence = WeighGrowth(padded, max_log_pdf, runs_.padded_log_pdf(), p, q);
  // After normalising by the evidence, the change mass is exactly H whatever x_t was: the
  // reason the detection rule looks at the lagged mass instead (docs/stats.md).
  const double h = hazard_(0);
  const double growth = (1 - h) / evidence;
  q[0] = h;
  double least = HUGE_VAL;
  for (size_t i = 1; i <= n; ++i) {
    q[i] *= growth;
    least = std::min(least, q[i]);
  }
  posterior_.swap(next_);
  ++t_;
  // Most steps drop nothing: a predictable branch instead of Prune's pass.
  const size_t cap = opts_.max_run_lengths;
  if (least < floor_ || (cap != 0 && n + 1 > cap)) Prune(least);
  return posterior();
}

void BocdDetector::Prune(double least) {
  const size_t n = runs_.size();
  double* p = posterior_.data();
  const double floor = floor_;
  const size_t cap = opts_.max_run_lengths;
  if (least >= floor && cap != 0 && n == cap + 1) {
    // Nearly every step once the cap is reached: none below the floor and one run length too
    // many. The least probable other than r = 0 (of equal ones the last, as below) is dropped by
    // moving those after it down one, where the general path lists every index it keeps and
    // gathers each array through the list (the same masses and runs, a third of the work).
    // `least` is one of p[1..n-1] (Step took it from them); the bound only keeps a posterior
    // gone wrong (no such mass) from reading past the front: the general path then decides.
    size_t drop = n - 1;
    while (drop > 0 && p[drop] != least) --drop;
    if (drop > 0) {
      std::copy(p + drop + 1, p + n, p + drop);
      runs_.Drop(drop);
      Renormalise(n - 1);
      return;
    }
  }
  if (keep_.size() < n) keep_.resize(std::max(n, 2 * keep_.size()));
  uint32_t* keep = keep_.data();
  keep[0] = 0;  // r = 0 is the change hypothesis itself; always kept
  size_t kept = 1;
  for (size_t i = 1; i < n; ++i) {  // branch-free: the outcome is hard to predict
    keep[kept] = static_cast<uint32_t>(i);
    kept += p[i] >= floor ? 1 : 0;
  }
  if (cap != 0 && kept == cap + 1) {
    // The usual case once the cap is reached (a step adds one run length): drop the least
    // probable run length other than r = 0 — of equal ones the last, as the selection below
    // would — without a selection.
    size_t drop = 1;
    for (size_t k = 2; k < kept; ++k)
      if (p[keep[k]] <= p[keep[drop]]) drop = k;
    std::copy(keep + drop + 1, keep + kept, keep + drop);
    --kept;
  } else if (cap != 0 && kept > cap) {
    // Keep r = 0 and the cap - 1 most probable others: find the (cap - 1)-th largest mass.
    const size_t want = cap - 1;
    select_.clear();
    for (size_t k = 1; k < kept; ++k) select_.push_back(p[keep[k]]);
    std::nth_element(select_.begin(), select_.begin() + static_cast<ptrdiff_t>(want - 1),
                     select_.end(), std::greater<>());
    const double cut = select_[want - 1];
    size_t ties = want;
    for (size_t k = 0; k + 1 < want; ++k) ties -= select_[k] > cut ? 1 : 0;
    size_t out = 1;
    for (size_t k = 1; k < kept; ++k) {
      const double v = p[keep[k]];
      if (v > cut || (v == cut && ties > 0)) {
        if (v == cut) --ties;
        keep[out++] = keep[k];
      }
    }
    kept = out;
  }
  if (kept == n) return;

  // Compact in place (keep is ascending, so writes never pass reads) and renormalise.
  for (size_t k = 0; k < kept; ++k) p[k] = p[keep[k]];
  runs_.Keep({keep, kept});
  Renormalise(kept);
}

void BocdDetector::Renormalise(size_t n) {
  double* p = posterior_.data();
  double sum = 0;
  for (size_t k = 0; k < n; ++k) sum += p[k];
  const double inv = 1 / sum;
  for (size_t k = 0; k < n; ++k) p[k] *= inv;
}

LaggedChangeRule::LaggedChangeRule(int lag, double threshold)
    : lag_(lag), threshold_(threshold) {
  PRISM_CHECK(lag >= 1);
}

void LaggedChangeRule::Reset() {
  last_mass_ = 0;
  last_start_.reset();
}

std::optional<size_t> LaggedChangeRule::Observe(const BocdDetector& d) {
  const size_t t = d.t();
  const size_t w = static_cast<size_t>(lag_);
  const std::span<const size_t> rl = d.run_lengths();
  const std::span<const double> p = d.posterior();
  double mass = 0;
  size_t best_r = 0;
  double best_p = -1;
  // Run lengths are ascending, so r <= w is a prefix of at most w + 1 entries.
  for (size_t i = 0; i < rl.size() && rl[i] <= w && rl[i] < t; ++i) {
    mass += p[i];
    if (rl[i] >= 1 && p[i] > best_p) {
      best_p = p[i];
      best_r = rl[i];
    }
  }
  last_mass_ = mass;
  if (mass <= threshold_ || best_r == 0) return std::nullopt;
  const size_t start = t - best_r;
  if (last_start_ && start <= *last_start_ + w) return std::nullopt;  // same change again
  last_start_ = start;
  return start;
}

std::vector<size_t> DetectChangePoints(std::span<const double> xs, const BocdOptions& opts) {
  BocdDetector detector(opts);
  LaggedChangeRule rule(opts.lag, opts.threshold);
  std::vector<size_t> starts;
  for (double x : xs) {
    detector.Step(x);
    if (std::optional<size_t> s = rule.Observe(detector)) starts.push_back(*s);
  }
  return starts;
}

}  // namespace prism::analysis
