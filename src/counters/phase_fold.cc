#include "counters/phase_fold.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace prism::counters {

IterationClock::IterationClock(std::vector<double> boundaries_ms)
    : boundaries_(std::move(boundaries_ms)) {}

double IterationClock::PhaseAt(double t_ms) const {
  if (boundaries_.size() < 2 || t_ms < boundaries_.front() || t_ms > boundaries_.back())
    return std::nan("");
  auto it = std::upper_bound(boundaries_.begin(), boundaries_.end(), t_ms);
  size_t k = static_cast<size_t>(it - boundaries_.begin());
  k = std::min(k == 0 ? 0 : k - 1, boundaries_.size() - 2);
  const double len = boundaries_[k + 1] - boundaries_[k];
  return static_cast<double>(k) + (len > 0 ? (t_ms - boundaries_[k]) / len : 0);
}

namespace {

// How much of each phase bin the interval (from, to] covers, summed over the iterations it spans.
std::vector<double> Coverage(const PhaseDelta& d, size_t bins) {
  std::vector<double> w(bins, 0);
  const double a = d.from * bins, b = d.to * bins;  // in bins, unwrapped
  for (double lo = a; lo < b;) {
    const double k = std::floor(lo);
    const double hi = std::min(b, k + 1);
    w[static_cast<size_t>(std::fmod(k, static_cast<double>(bins)) + bins) % bins] += hi - lo;
    lo = hi;
  }
  return w;
}

}  // namespace

std::vector<double> FoldByPhase(const std::vector<PhaseDelta>& deltas, size_t bins) {
  if (bins == 0 || deltas.size() < bins) return {};
  // Normal equations G g = r of the least-squares problem, accumulated row by row.
  std::vector<double> gram(bins * bins, 0), rhs(bins, 0);
  double bytes = 0, cover = 0;
  for (const PhaseDelta& d : deltas) {
    const std::vector<double> w = Coverage(d, bins);
    for (size_t i = 0; i < bins; ++i) {
      if (w[i] == 0) continue;
      rhs[i] += w[i] * d.bytes;
      for (size_t j = 0; j < bins; ++j) gram[i * bins + j] += w[i] * w[j];
    }
    bytes += d.bytes;
    cover += std::accumulate(w.begin(), w.end(), 0.0);
  }
  // A whisker of ridge keeps a bin no interval touches at a defined value (zero).
  double trace = 0;
  for (size_t i = 0; i < bins; ++i) trace += gram[i * bins + i];
  for (size_t i = 0; i < bins; ++i) gram[i * bins + i] += 1e-6 * trace / bins + 1e-300;
  std::vector<double> g(bins, cover > 0 ? bytes / cover : 0);
  for (int sweep = 0; sweep < 300; ++sweep) {
    for (size_t i = 0; i < bins; ++i) {
      double grad = -rhs[i];
      for (size_t j = 0; j < bins; ++j) grad += gram[i * bins + j] * g[j];
      g[i] = std::max(0.0, g[i] - grad / gram[i * bins + i]);
    }
  }
  return g;
}

size_t BusiestPair(const std::vector<double>& profile) {
  const size_t n = profile.size();
  size_t peak = 0;
  double best = -1;
  for (size_t i = 0; i < n; ++i) {
    const double pair = profile[i] + profile[(i + 1) % n];
    if (pair > best) {
      best = pair;
      peak = i;
    }
  }
  return peak;
}

double EarlyShareBefore(const std::vector<double>& profile, size_t peak, size_t lead_bins,
                        size_t margin_bins) {
  const size_t n = profile.size();
  const double total = std::accumulate(profile.begin(), profile.end(), 0.0);
  if (n < 2 || total <= 0) return 0;
  double early = 0;
  for (size_t k = margin_bins; k <= lead_bins && k < n; ++k) early += profile[(peak + n - k) % n];
  return early / total;
}

double EarlyShare(const std::vector<double>& profile, size_t lead_bins, size_t margin_bins) {
  return EarlyShareBefore(profile, BusiestPair(profile), lead_bins, margin_bins);
}

}  // namespace prism::counters
