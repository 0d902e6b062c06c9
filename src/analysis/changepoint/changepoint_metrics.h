// File: analysis/changepoint/changepoint_metrics.h
// Scoring of detected change points against known ones, for tests and eval (src/eval). Change
// points are indices of the first point of a new segment, as DetectChangePoints (bocd.h) returns.
// After ruptures' metrics (hausdorff.py, precisionrecall.py).
#pragma once

#include <cstddef>
#include <span>

namespace prism::analysis {

// Largest distance from a point of one set to the nearest point of the other, in points. 0 when
// both are empty, +infinity when exactly one is.
double HausdorffDistance(std::span<const size_t> a, std::span<const size_t> b);

struct PrecisionRecall {
  double precision, recall;
};

// Matches found points to true ones one-to-one when |found - truth| <= margin (a maximum matching;
// each point counts at most once). precision = matched / |found| (1 if nothing was found),
// recall = matched / |truth| (1 if there is nothing to find). Inputs need not be sorted.
PrecisionRecall ChangePointPrecisionRecall(std::span<const size_t> truth,
                                           std::span<const size_t> found, size_t margin);

}  // namespace prism::analysis
