#include "counters/period.h"

#include <algorithm>
#include <cmath>

namespace prism::counters {

std::vector<double> Detrend(std::span<const double> x, std::span<const uint8_t> valid, size_t window) {
  const size_t n = x.size();
  std::vector<double> out(n, 0);
  // Prefix sums of valid values and counts for the moving average.
  std::vector<double> sum(n + 1, 0);
  std::vector<double> cnt(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    sum[i + 1] = sum[i] + (valid[i] ? x[i] : 0);
    cnt[i + 1] = cnt[i] + (valid[i] ? 1 : 0);
  }
  const size_t half = window / 2;
  for (size_t i = 0; i < n; ++i) {
    if (!valid[i]) continue;
    size_t lo = i > half ? i - half : 0, hi = std::min(n, i + half + 1);
    double c = cnt[hi] - cnt[lo];
    out[i] = x[i] - (c > 0 ? (sum[hi] - sum[lo]) / c : 0);
  }
  return out;
}

namespace {

// r at one lag, energies from prefix sums of squares.
double LagCorrelation(const std::vector<double>& x, const std::vector<double>& sq, size_t lag) {
  const size_t n = x.size();
  if (lag >= n) return 0;
  const size_t m = n - lag;
  double dot = 0;
  const double* a = x.data();
  const double* b = x.data() + lag;
  for (size_t t = 0; t < m; ++t) dot += a[t] * b[t];
  const double ea = sq[m], eb = sq[n] - sq[lag];
  return ea > 0 && eb > 0 ? dot / std::sqrt(ea * eb) : 0;
}

std::vector<double> SquarePrefix(const std::vector<double>& x) {
  std::vector<double> sq(x.size() + 1, 0);
  for (size_t i = 0; i < x.size(); ++i) sq[i + 1] = sq[i] + x[i] * x[i];
  return sq;
}

}  // namespace

std::vector<double> Autocorrelation(std::span<const double> x_span, size_t max_lag) {
  std::vector<double> x(x_span.begin(), x_span.end());
  const size_t n = x.size();
  max_lag = std::min(max_lag, n > 0 ? n - 1 : 0);
  std::vector<double> sq = SquarePrefix(x);
  std::vector<double> r(max_lag + 1, 0);
  for (size_t lag = 0; lag <= max_lag; ++lag) r[lag] = LagCorrelation(x, sq, lag);
  return r;
}

namespace {

// Vertex offset in (-0.5, 0.5) of the parabola through (i-1, i, i+1).
double ParabolicOffset(const std::vector<double>& r, size_t i) {
  if (i == 0 || i + 1 >= r.size()) return 0;
  const double a = r[i - 1], b = r[i], c = r[i + 1];
  const double den = a - 2 * b + c;
  if (den >= 0) return 0;
  return std::clamp(0.5 * (a - c) / den, -0.5, 0.5);
}

}  // namespace

PeriodEstimate EstimatePeriod(std::span<const double> x_in, std::span<const uint8_t> valid,
                              double bin_s, const PeriodOptions& options) {
  PeriodEstimate est;
  const size_t n = x_in.size();
  const size_t min_lag = std::max<size_t>(2, static_cast<size_t>(options.min_period_s / bin_s));
  size_t max_lag = static_cast<size_t>(options.max_period_s / bin_s);
  // Only valid bins count; keep at least 3 periods of overlap at the longest lag.
  size_t valid_n = 0;
  for (uint8_t v : valid) valid_n += v ? 1 : 0;
  max_lag = std::min(max_lag, valid_n / 3);
  if (max_lag <= min_lag + 2) return est;
  std::vector<double> x = Detrend(x_in, valid, std::max<size_t>(static_cast<size_t>(3 * options.max_period_s / bin_s), 8));
  // Peaks up to 4x the longest period refine the fit; detection uses lags up to max_lag.
  const size_t fit_lag = std::min(n > 0 ? n - 1 : 0, std::min(valid_n / 2, 4 * max_lag));
  std::vector<double> sq = SquarePrefix(x);
  // r is computed for every lag up to max_lag + 2, and beyond that only around the multiples of the
  // fundamental (NaN marks "not computed").
  std::vector<double> r(std::max(max_lag + 3, fit_lag + 1), std::nan(""));
  for (size_t lag = 0; lag <= max_lag + 2 && lag < r.size(); ++lag) r[lag] = LagCorrelation(x, sq, lag);
  auto at = [&](size_t lag) {
    if (std::isnan(r[lag])) r[lag] = LagCorrelation(x, sq, lag);
    return r[lag];
  };

  struct Peak {
    size_t lag;
    double r;
  };
  std::vector<Peak> peaks;
  for (size_t lag = min_lag; lag <= max_lag; ++lag) {
    if (r[lag] < r[lag - 1] || r[lag] < r[lag + 1]) continue;
    if (lag >= 2 && r[lag] < r[lag - 2]) continue;
    if (r[lag] < r[lag + 2]) continue;
    double low = r[lag];
    for (size_t j = lag / 2; j < lag; ++j) low = std::min(low, r[j]);
    if (r[lag] - low < options.min_prominence) continue;
    if (r[lag] < options.min_strength) continue;
    peaks.push_back({lag, r[lag]});
  }
  if (peaks.empty()) return est;
  double best = 0;
  for (const Peak& p : peaks) best = std::max(best, p.r);
  const Peak* fund = nullptr;
  for (const Peak& p : peaks) {
    if (p.r >= options.harmonic_ratio * best) {
      fund = &p;
      break;
    }
  }
  const double p0 = static_cast<double>(fund->lag) + ParabolicOffset(r, fund->lag);
  // Least squares through the origin over the multiples' peaks: P = sum(m * lag_m) / sum(m^2).
  double num = 0, den = 0;
  for (int m = 1;; ++m) {
    const double centre = m * p0;
    const double tol = std::max(2.0, 0.04 * centre);
    size_t lo = static_cast<size_t>(std::max(1.0, std::floor(centre - tol)));
    size_t hi = static_cast<size_t>(std::ceil(centre + tol));
    if (hi + 1 >= r.size()) break;
    size_t arg = lo;
    for (size_t j = lo - 1; j <= hi + 1; ++j) at(j);
    for (size_t j = lo; j <= hi; ++j)
      if (r[j] > r[arg]) arg = j;
    if (arg == lo || arg == hi) continue;  // no peak inside the window
    if (r[arg] < 0.5 * fund->r) continue;
    const double lag = static_cast<double>(arg) + ParabolicOffset(r, arg);
    num += m * lag;
    den += static_cast<double>(m) * m;
  }
  const double period_bins = den > 0 ? num / den : p0;
  est.period_s = period_bins * bin_s;
  est.strength = fund->r;
  return est;
}

bool HarmonicallyRelated(double a_s, double b_s, double tolerance) {
  if (a_s <= 0 || b_s <= 0) return false;
  const double ratio = a_s > b_s ? a_s / b_s : b_s / a_s;
  for (double k : {1.0, 2.0, 3.0}) {
    if (std::abs(ratio - k) <= tolerance * k) return true;
  }
  return false;
}

}  // namespace prism::counters
