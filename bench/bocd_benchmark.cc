// BOCD per point on the series the pipeline feeds it (log idle times between a pair's transfers;
// bench_data.h), three ways:
//  - BM_FindBursts: the pipeline's own use (analysis/steps/step_segmenter.cc: per-series prior,
//    hazard 0.2, pruning at 1e-9, cap 32, lagged-mass rule, reset after each cut);
//  - BM_BocdStepPruned: BocdDetector::Step alone with those options;
//  - BM_BocdStraightforward/K: a textbook BOCD keeping every run length up to a fixed cap K (no
//    pruning), Student-t predictive with lgamma per run length and point.
// The ratio straightforward / pruned is reported in docs/performance.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "analysis/changepoint/bocd.h"
#include "analysis/steps/step_segmenter.h"
#include "bench/bench_data.h"

namespace prism::bench {
namespace {

constexpr size_t kPoints = 100'000;

double MedianOf(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The step segmenter's prior for a series (IntervalPrior in step_segmenter.cc).
analysis::BocdOptions PipelineOptions(const std::vector<double>& xs) {
  analysis::StepSegmenterOptions seg;
  analysis::BocdOptions o = seg.bocd;
  o.prior.mu0 = MedianOf(xs);
  std::vector<double> dev(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) dev[i] = std::fabs(xs[i] - o.prior.mu0);
  const double sigma = std::clamp(1.4826 * MedianOf(dev), seg.min_log_sigma, seg.max_log_sigma);
  o.prior.kappa0 = 0.01;
  o.prior.alpha0 = 1;
  o.prior.beta0 = sigma * sigma;
  o.max_run_lengths = seg.max_run_lengths;
  return o;
}

void SetPerPoint(benchmark::State& state, size_t points) {
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(points));
  state.counters["ns_per_point"] = benchmark::Counter(
      double(state.iterations()) * double(points) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_FindBursts(benchmark::State& state) {
  std::vector<int64_t> start, end;
  PipelineTransferTimes(kPoints + 1, 1, &start, &end);
  analysis::StepSegmenterOptions options;
  size_t bursts = 0;
  for (auto _ : state) {
    auto b = analysis::FindBursts(start, end, options);
    bursts = b.size();
    benchmark::DoNotOptimize(b.data());
  }
  state.counters["bursts"] = double(bursts);
  SetPerPoint(state, kPoints);
}
BENCHMARK(BM_FindBursts)->Unit(benchmark::kMillisecond);

void BM_BocdStepPruned(benchmark::State& state) {
  const std::vector<double> xs = PipelineIntervalSeries(kPoints, 1);
  const analysis::BocdOptions options = PipelineOptions(xs);
  double kept = 0;
  for (auto _ : state) {
    analysis::BocdDetector d(options);
    analysis::LaggedChangeRule rule(options.lag, options.threshold);
    size_t kept_sum = 0;
    for (double x : xs) {
      d.Step(x);
      kept_sum += d.run_lengths().size();
      if (rule.Observe(d)) {  // as the pipeline does: start afresh after a cut
        d.Reset();
        rule.Reset();
      }
    }
    kept = double(kept_sum) / double(xs.size());
  }
  state.counters["kept_run_lengths"] = kept;
  SetPerPoint(state, kPoints);
}
BENCHMARK(BM_BocdStepPruned)->Unit(benchmark::kMillisecond);

// Textbook BOCD (Adams & MacKay 2007): run lengths 0..K-1, the longest one absorbing the mass
// that would grow past the cap; Student-t predictive evaluated with lgamma.
class StraightforwardBocd {
 public:
  StraightforwardBocd(const analysis::BocdOptions& o, size_t cap)
      : o_(o), cap_(cap), p_(cap, 0), mu_(cap), kappa_(cap), alpha_(cap), beta_(cap), lp_(cap) {
    Reset();
  }
  void Reset() {
    std::fill(p_.begin(), p_.end(), 0.0);
    p_[0] = 1;
    n_ = 1;
    mu_[0] = o_.prior.mu0;
    kappa_[0] = o_.prior.kappa0;
    alpha_[0] = o_.prior.alpha0;
    beta_[0] = o_.prior.beta0;
  }
  // Returns P(r_t <= lag) for the lagged-mass rule.
  double Step(double x) {
    double max_lp = -HUGE_VAL;
    for (size_t r = 0; r < n_; ++r) {
      const double nu = 2 * alpha_[r];
      const double scale = std::sqrt(beta_[r] * (kappa_[r] + 1) / (alpha_[r] * kappa_[r]));
      const double z = (x - mu_[r]) / scale;
      lp_[r] = std::lgamma(0.5 * (nu + 1)) - std::lgamma(0.5 * nu) -
               0.5 * std::log(nu * std::numbers::pi) - std::log(scale) -
               0.5 * (nu + 1) * std::log1p(z * z / nu);
      max_lp = std::max(max_lp, lp_[r]);
    }
    const size_t grown = std::min(n_ + 1, cap_);
    std::vector<double>& p = p_;
    double evidence = 0;
    // Growth, from the top so the shift happens in place; the last slot absorbs overflow.
    double overflow = n_ == cap_ ? p[cap_ - 1] * std::exp(lp_[cap_ - 1] - max_lp) : 0;
    for (size_t r = std::min(n_, cap_ - 1); r-- > 0;) {
      const double e = p[r] * std::exp(lp_[r] - max_lp);
      evidence += e;
      p[r + 1] = e;
      const double k = kappa_[r], a = alpha_[r], d = x - mu_[r];
      mu_[r + 1] = (k * mu_[r] + x) / (k + 1);
      kappa_[r + 1] = k + 1;
      alpha_[r + 1] = a + 0.5;
      beta_[r + 1] = beta_[r] + k * d * d / (2 * (k + 1));
    }
    p[cap_ - 1] += overflow;
    evidence += overflow;
    n_ = grown;
    const double h = o_.hazard;
    p[0] = h * evidence;
    mu_[0] = o_.prior.mu0;
    kappa_[0] = o_.prior.kappa0;
    alpha_[0] = o_.prior.alpha0;
    beta_[0] = o_.prior.beta0;
    double sum = p[0];
    for (size_t r = 1; r < n_; ++r) sum += (p[r] *= (1 - h));
    double lagged = 0;
    for (size_t r = 0; r < n_; ++r) {
      p[r] /= sum;
      if (r <= size_t(o_.lag)) lagged += p[r];
    }
    return lagged;
  }

 private:
  analysis::BocdOptions o_;
  size_t cap_, n_ = 1;
  std::vector<double> p_, mu_, kappa_, alpha_, beta_, lp_;
};

void BM_BocdStraightforward(benchmark::State& state) {
  const std::vector<double> xs = PipelineIntervalSeries(kPoints, 1);
  const analysis::BocdOptions options = PipelineOptions(xs);
  const size_t cap = size_t(state.range(0));
  for (auto _ : state) {
    StraightforwardBocd d(options, cap);
    size_t since_reset = 0;
    for (double x : xs) {
      const double mass = d.Step(x);
      benchmark::DoNotOptimize(mass);
      if (++since_reset > size_t(options.lag) + 1 && mass > options.threshold) {
        d.Reset();
        since_reset = 0;
      }
    }
  }
  SetPerPoint(state, kPoints);
}
BENCHMARK(BM_BocdStraightforward)->Arg(32)->Arg(100)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace prism::bench
