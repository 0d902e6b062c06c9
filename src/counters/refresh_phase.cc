#include "counters/refresh_phase.h"

#include <algorithm>
#include <cmath>

namespace prism::counters {

double ReadInstantMs(const RefreshLattice& lattice, int64_t poll_ms) {
  if (lattice.refresh_ms <= 0) return static_cast<double>(poll_ms);
  const double t = static_cast<double>(poll_ms);
  return lattice.phase_ms + std::floor((t - lattice.phase_ms) / lattice.refresh_ms) *
                                lattice.refresh_ms;
}

namespace {

constexpr int kPhaseBins = 100;

struct Interval {
  double from_ms, to_ms;
  int sign;  // +1: new bytes (a refresh inside), -1: none
};

// For one period: the phase bin whose lattice agrees with the most intervals, and how many.
std::pair<int, int> BestPhase(const std::vector<Interval>& iv, double period_ms, int zeros) {
  std::vector<int> diff(kPhaseBins + 1, 0);
  // Bins whose centre lies in (a, b] (fractions of the period).
  auto add = [&](double a, double b, int s) {
    const int ka = static_cast<int>(std::ceil(a * kPhaseBins - 0.5));
    const int kb = static_cast<int>(std::ceil(b * kPhaseBins - 0.5));
    diff[std::clamp(ka, 0, kPhaseBins)] += s;
    diff[std::clamp(kb, 0, kPhaseBins)] -= s;
  };
  for (const Interval& v : iv) {
    if (v.to_ms - v.from_ms >= period_ms) {  // a refresh inside whatever the phase
      add(0, 1, v.sign);
      continue;
    }
    const double fa = v.from_ms / period_ms, fb = v.to_ms / period_ms;
    const double a = fa - std::floor(fa), b = fb - std::floor(fb);
    if (a <= b) {
      add(a, b, v.sign);
    } else {
      add(a, 1, v.sign);
      add(0, b, v.sign);
    }
  }
  int best = -1 << 30, arg = 0, run = 0;
  for (int k = 0; k < kPhaseBins; ++k) {
    run += diff[k];
    if (run > best) {
      best = run;
      arg = k;
    }
  }
  return {arg, zeros + best};
}

}  // namespace

RefreshLattice EstimateRefreshLattice(const std::vector<int64_t>& ts_ms,
                                      const std::vector<bool>& nonzero, double refresh_s,
                                      int64_t from_ms, int64_t to_ms) {
  RefreshLattice out;
  const double hi_ms = refresh_s * 1000 * 1.005, lo_ms = refresh_s * 1000 * 0.75;
  std::vector<Interval> iv;
  int zeros = 0;
  for (size_t i = 1; i < ts_ms.size(); ++i) {
    if (ts_ms[i - 1] < from_ms || ts_ms[i] > to_ms) continue;
    // Relative to the window: small numbers keep the phase arithmetic exact.
    const double a = static_cast<double>(ts_ms[i - 1] - from_ms);
    const double b = static_cast<double>(ts_ms[i] - from_ms);
    if (b - a >= hi_ms) continue;  // holds a refresh whatever the lattice: says nothing
    iv.push_back({a, b, nonzero[i] ? 1 : -1});
    zeros += nonzero[i] ? 0 : 1;
  }
  if (iv.size() < 20 || lo_ms < 10) return out;
  const double span_ms = static_cast<double>(to_ms - from_ms);
  const double step_ms = std::max(1e-4, 10.0 * lo_ms / std::max(span_ms, 1.0));
  // Every period agreeing best; the middle one (the lattice is known to that width).
  int best = -1;
  std::vector<std::pair<double, int>> top;  // period, phase bin
  for (double r = lo_ms; r <= hi_ms; r += step_ms) {
    const auto [bin, score] = BestPhase(iv, r, zeros);
    if (score > best) {
      best = score;
      top.clear();
    }
    if (score == best) top.push_back({r, bin});
  }
  const auto [r, bin] = top[top.size() / 2];
  out.refresh_ms = r;
  out.phase_ms = std::fmod((bin + 0.5) * r / kPhaseBins + static_cast<double>(from_ms), r);
  out.fit = static_cast<double>(best) / static_cast<double>(iv.size());
  return out;
}

}  // namespace prism::counters
