// File: analysis/changepoint/hazard.h
// Hazard functions for Bayesian online change-point detection (bocd.h): H(r) is the prior
// probability that a segment which has lasted r observations ends before the next one. Used by
// step segmentation for pair classification and by timeline reconstruction (docs/design.md, Pair
// classification and Timelines).
#pragma once

#include <cstddef>

namespace prism::analysis {

// Memoryless hazard: segment lengths are a priori geometric with mean 1 / h.
struct ConstantHazard {
  double h;
  double operator()(size_t /*run_length*/) const { return h; }
};

}  // namespace prism::analysis
