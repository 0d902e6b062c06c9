// File: diagnosis/robust_stats.h
// Median and MAD-based sigma: k-sigma rules over small samples that may hold the very outliers
// they look for need a centre and spread the outliers cannot drag.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

namespace prism::diagnosis {

// The median of `v`, reordering it (no copy).
inline double MedianInPlace(std::span<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  return (*std::max_element(v.begin(), v.begin() + mid) + upper) / 2;
}

inline double Median(std::vector<double> v) { return MedianInPlace(v); }

// The mean of the middle half of `v` (ranks n/4 .. n - n/4 - 1), reordering it: as robust to
// outliers as the median, but it moves smoothly when a few values come or go where the median
// jumps between the levels of a multimodal sample.
inline double InterquartileMean(std::span<double> v) {
  if (v.empty()) return 0;
  const size_t lo = v.size() / 4, hi = v.size() - lo;
  std::nth_element(v.begin(), v.begin() + lo, v.end());
  if (hi < v.size()) std::nth_element(v.begin() + lo, v.begin() + hi, v.end());
  double sum = 0;
  for (size_t i = lo; i < hi; ++i) sum += v[i];
  return sum / double(hi - lo);
}

// 1.4826 * median absolute deviation: sigma of a normal sample, robust to outliers.
inline double RobustSigma(const std::vector<double>& v, double centre) {
  std::vector<double> dev(v.size());
  for (size_t i = 0; i < v.size(); ++i) dev[i] = v[i] > centre ? v[i] - centre : centre - v[i];
  return 1.4826 * Median(std::move(dev));
}

// Runs of flagged units: [first, last] index ranges, merging runs split by at most `max_gap`
// unflagged units.
struct Run {
  size_t first = 0, last = 0;
  size_t flagged = 0;
};
inline std::vector<Run> FlaggedRuns(const std::vector<bool>& flags, size_t max_gap) {
  std::vector<Run> runs;
  for (size_t i = 0; i < flags.size(); ++i) {
    if (!flags[i]) continue;
    if (!runs.empty() && i - runs.back().last <= max_gap + 1) {
      runs.back().last = i;
      ++runs.back().flagged;
    } else {
      runs.push_back({i, i, 1});
    }
  }
  return runs;
}

}  // namespace prism::diagnosis
