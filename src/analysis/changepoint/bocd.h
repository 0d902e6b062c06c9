// File: analysis/changepoint/bocd.h
// Bayesian online change-point detection (Adams & MacKay 2007) with a constant hazard and a
// Normal-Gamma model, plus the lagged-mass rule that turns the run-length posterior into change
// points. Used on log inter-flow intervals to cut a GPU pair's flows into training steps
// (docs/design.md, Pair classification) and on a GPU's DP flow intervals for its timeline
// (docs/design.md, Timelines).
// The model, the rule and the defaults are explained in docs/stats.md.
//
// Indexing: observations are x_0, x_1, ...; after t observations a run length r means the current
// segment is x_{t-r} .. x_{t-1}, so it began at index t - r (r = 0: a segment begins with the next
// observation). A change point is reported as the index of the first point of the new segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "analysis/changepoint/hazard.h"
#include "analysis/changepoint/normal_gamma.h"

namespace prism::analysis {

struct BocdOptions {
  double hazard = 1.0 / 100;  // constant hazard (expected run length 100)
  NormalGammaPrior prior;
  double prune_mass = 1e-9;  // run lengths whose posterior mass falls below this are dropped
  size_t max_run_lengths = 0;  // 0 = unlimited; otherwise keep at most this many (the most
                               // probable) — bounds cost per point. Must be 0 or >= 2.
  int lag = 2;                 // w in the detection rule, >= 1
  double threshold = 0.95;     // detection threshold on the lagged mass
};

// The run-length recursion. Invalid options (hazard outside (0, 1), lag < 1, max_run_lengths == 1)
// and non-finite observations are caller bugs and hit PRISM_CHECK; callers taking logs of
// intervals must clamp zero intervals first.
class BocdDetector {
 public:
  explicit BocdDetector(const BocdOptions& opts);

  // Consumes one observation; returns the run-length posterior P(r_t = r | x_1:t) for the run
  // lengths kept (index i = run length as given by run_lengths()[i], ascending, starting at 0).
  // Valid until the next call to Step() or Reset().
  std::span<const double> Step(double x);
  std::span<const double> posterior() const { return {posterior_.data(), runs_.size()}; }
  std::span<const size_t> run_lengths() const { return runs_.run_lengths(); }
  void Reset();
  size_t t() const { return t_; }  // observations consumed since construction / Reset()
  const BocdOptions& options() const { return opts_; }

 private:
  // Drops the run lengths below the floor and those past the cap. `least`: the smallest mass of
  // a run length other than r = 0.
  void Prune(double least);
  // Divides the first `n` masses by their sum (the mass dropped is spread over those kept).
  void Renormalise(size_t n);

  BocdOptions opts_;
  ConstantHazard hazard_;
  double floor_;  // smallest mass kept
  NormalGammaRuns runs_;
  // Aligned with runs_ (runs_.size() entries), padded like runs_ with zeros.
  std::vector<double> posterior_;
  std::vector<double> next_;  // the next posterior, swapped in by Step
  size_t t_ = 0;
  // Scratch, reused every step (no allocation per step in steady state).
  std::vector<uint32_t> keep_;
  std::vector<double> select_;
};

// The detection rule, evaluated online after each BocdDetector::Step. With w = lag, t = d.t():
//   mass(t) = P(r_t <= w and r_t < t | x_1:t)
// (r_t = t, "no change since the first point", is excluded). When mass(t) > threshold a change is
// declared at start index s = t - r*, where r* is the most probable run length in 1..w. A later
// declaration whose start lies within w points after the previous one is the same change seen
// again (the mass stays high for up to w steps after a change) and is suppressed, so reported
// starts are at least w + 1 apart.
class LaggedChangeRule {
 public:
  LaggedChangeRule(int lag, double threshold);
  // Returns the start index of a newly declared segment, if any.
  std::optional<size_t> Observe(const BocdDetector& d);
  void Reset();
  double last_mass() const { return last_mass_; }

 private:
  int lag_;
  double threshold_;
  double last_mass_ = 0;
  std::optional<size_t> last_start_;
};

// Offline convenience used by the pipeline: returns the indices i (0 < i < xs.size()) at which a
// new segment begins, i.e. x_i is the first point after a change, using the lagged-mass rule above
// (LaggedChangeRule with opts.lag and opts.threshold). Ascending, at least lag + 1 apart.
std::vector<size_t> DetectChangePoints(std::span<const double> xs, const BocdOptions& opts);

}  // namespace prism::analysis
