// File: counters/period.h
// Counters mode: the step period of a byte-rate series by autocorrelation, robust to harmonics.
// An iteration of a training job repeats its traffic, so the normalised autocorrelation r(lag) has
// peaks at P, 2P, 3P... and, when an iteration holds two similar halves (or alternating iterations
// differ), also at P/2 or a strong peak at 2P. Taking the highest peak picks 22.8 s on one port and
// 11.4 s on another for the same job; we take the *shortest* lag whose peak reaches
// harmonic_ratio of the highest one, then refine it by a least-squares fit through the peaks at its
// multiples (precision ~ bin / m rather than one bin). Used per server and per job.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace prism::counters {

struct PeriodOptions {
  double min_period_s = 1.5;
  double max_period_s = 120;
  double harmonic_ratio = 0.8;  // a shorter peak this close to the best one is the fundamental
  double min_strength = 0.15;   // r at the period below this: "not periodic"
  double min_prominence = 0.08; // peak above the lowest r between half its lag and it
};

struct PeriodEstimate {
  double period_s = 0;  // 0 when not periodic
  double strength = 0;  // r(period), in [-1, 1]
};

// Removes slow trends (a centred moving average of `window` bins) and the mean from the valid bins;
// invalid bins become 0. Returns the detrended copy.
std::vector<double> Detrend(std::span<const double> x, std::span<const uint8_t> valid, size_t window);

// r(lag) for lag in [0, max_lag], each lag's Pearson-style correlation of x[t] with x[t+lag] over the
// overlap (no re-centring: x is detrended).
std::vector<double> Autocorrelation(std::span<const double> x, size_t max_lag);

PeriodEstimate EstimatePeriod(std::span<const double> x, std::span<const uint8_t> valid,
                              double bin_s, const PeriodOptions& options);

// Are two periods the same job's, up to a harmonic (ratio 1, 2, 3 or 1/2, 1/3 within tolerance)?
bool HarmonicallyRelated(double a_s, double b_s, double tolerance = 0.05);

}  // namespace prism::counters
