#include "analysis/changepoint/bocd.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>

#include "core/status.h"

namespace prism::analysis {

BocdDetector::BocdDetector(const BocdOptions& opts)
    : opts_(opts), hazard_{opts.hazard}, runs_(opts.prior) {
  PRISM_CHECK(opts.hazard > 0 && opts.hazard < 1);
  PRISM_CHECK(opts.lag >= 1);
  PRISM_CHECK(opts.max_run_lengths != 1);
  PRISM_CHECK(opts.prune_mass >= 0 && opts.prune_mass < 1);
  if (opts.max_run_lengths != 0) {
    // One extra slot: a step grows the set by one before pruning.
    posterior_.reserve(opts.max_run_lengths + 1);
    log_pdf_.reserve(opts.max_run_lengths + 1);
    keep_.reserve(opts.max_run_lengths + 1);
    select_.reserve(opts.max_run_lengths + 1);
  }
  Reset();
}

void BocdDetector::Reset() {
  runs_.Reset();
  posterior_.assign(1, 1.0);  // P(r_0 = 0) = 1: a segment starts with the first observation
  t_ = 0;
}

std::span<const double> BocdDetector::Step(double x) {
  PRISM_CHECK(std::isfinite(x));
  const size_t n = posterior_.size();
  log_pdf_.resize(n + 1);
  posterior_.resize(n + 1);
  const double max_log_pdf = runs_.ObserveAndGrow(x, log_pdf_);

  // Growth: P(r_t = r + 1) ∝ P(r_{t-1} = r) p(x_t | run r) (1 - H). Change: P(r_t = 0) ∝ H times
  // the sum of the same terms (constant hazard). Scaled by the largest predictive density so
  // nothing overflows; descending so the shift to r + 1 happens in place.
  double* p = posterior_.data();
  const double* lp = log_pdf_.data();
  double evidence = 0;
  for (size_t i = n; i-- > 0;) {
    const double e = p[i] * std::exp(lp[i + 1] - max_log_pdf);
    evidence += e;
    p[i + 1] = e;
  }
  // After normalising by the evidence, the change mass is exactly H whatever x_t was: the
  // reason the detection rule looks at the lagged mass instead (docs/stats.md).
  const double h = hazard_(0);
  const double growth = (1 - h) / evidence;
  p[0] = h;
  for (size_t i = 1; i <= n; ++i) p[i] *= growth;
  ++t_;
  Prune();
  return posterior_;
}

void BocdDetector::Prune() {
  const size_t n = posterior_.size();
  double* p = posterior_.data();
  // Masses below DBL_MIN are always dropped so the evidence of the next step cannot underflow.
  const double floor = std::max(opts_.prune_mass, DBL_MIN);
  keep_.clear();
  keep_.push_back(0);  // r = 0 is the change hypothesis itself; always kept
  for (size_t i = 1; i < n; ++i) {
    if (p[i] >= floor) keep_.push_back(static_cast<uint32_t>(i));
  }
  const size_t cap = opts_.max_run_lengths;
  if (cap != 0 && keep_.size() == cap + 1) {
    // The usual case once the cap is reached (a step adds one run length): drop the least
    // probable run length other than r = 0 — of equal ones the last, as the selection below
    // would — without a selection.
    size_t drop = 1;
    for (size_t k = 2; k < keep_.size(); ++k)
      if (p[keep_[k]] <= p[keep_[drop]]) drop = k;
    keep_.erase(keep_.begin() + static_cast<ptrdiff_t>(drop));
  } else if (cap != 0 && keep_.size() > cap) {
    // Keep r = 0 and the cap - 1 most probable others: find the (cap - 1)-th largest mass.
    const size_t want = cap - 1;
    select_.clear();
    for (size_t k = 1; k < keep_.size(); ++k) select_.push_back(p[keep_[k]]);
    std::nth_element(select_.begin(), select_.begin() + static_cast<ptrdiff_t>(want - 1),
                     select_.end(), std::greater<>());
    const double cut = select_[want - 1];
    size_t ties = want;
    for (size_t k = 0; k + 1 < want; ++k) ties -= select_[k] > cut ? 1 : 0;
    size_t out = 1;
    for (size_t k = 1; k < keep_.size(); ++k) {
      const double v = p[keep_[k]];
      if (v > cut || (v == cut && ties > 0)) {
        if (v == cut) --ties;
        keep_[out++] = keep_[k];
      }
    }
    keep_.resize(out);
  }
  if (keep_.size() == n) return;

  // Compact in place (keep_ is ascending, so writes never pass reads) and renormalise: the
  // dropped mass is spread over the kept run lengths.
  double sum = 0;
  for (size_t k = 0; k < keep_.size(); ++k) {
    p[k] = p[keep_[k]];
    sum += p[k];
  }
  posterior_.resize(keep_.size());
  const double inv = 1 / sum;
  for (double& v : posterior_) v *= inv;
  runs_.Keep(keep_);
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
