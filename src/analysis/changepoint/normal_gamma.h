// File: analysis/changepoint/normal_gamma.h
// The observation model of our BOCD (bocd.h): each segment is i.i.d. Normal with unknown mean and
// precision under a conjugate Normal-Gamma prior, so the posterior predictive of the next point is
// a Student-t. NormalGammaRuns keeps the sufficient statistics of every kept run length as flat
// arrays (structure of arrays) and updates them in place, one observation at a time.
//
// Cost per run length and observation: a quarter of a four-lane log (vec_math.h) plus a few
// multiply-adds. The Student-t log pdf is evaluated in its "marginal likelihood ratio" form
//   log p(x | run) = c(r) + alpha_r * log(beta_r) - (alpha_r + 1/2) * log(beta'_r)
// where beta'_r is the posterior beta after x (needed anyway for the update, and its log is kept for
// the next step), and c(r) = lgamma(alpha_r + 1/2) - lgamma(alpha_r) + log(kappa_r/(kappa_r+1))/2
// - log(2 pi)/2 depends on the run length only (alpha grows by 1/2, kappa by 1 per observation), so
// it is tabulated once per run length, by a recurrence, instead of calling lgamma per point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace prism::analysis {

// Normal-Gamma prior on (mean, precision) of one segment: mean | precision ~ N(mu0, 1/(kappa0 *
// precision)), precision ~ Gamma(alpha0, rate = beta0). The prior predictive is a Student-t with
// 2 * alpha0 degrees of freedom, location mu0 and scale^2 = beta0 (kappa0 + 1) / (alpha0 kappa0).
// Defaults suit data of unit scale around 0; scale mu0 and beta0 to the data otherwise.
struct NormalGammaPrior {
  double mu0 = 0, kappa0 = 1, alpha0 = 1, beta0 = 1;
};

// Empirical-Bayes prior scaled to a series, so detection does not depend on its units or offset
// (the defaults above assume unit-scale data near 0; log intervals sit near -9). mu0 = median,
// noise variance s^2 from the median absolute first difference (robust to the changes themselves),
// beta0 = alpha0 * s^2, kappa0 = s^2 / var(xs) clamped to [1e-4, 1] (segment means spread like
// the whole series). alpha0 stays 1. Empty or constant input gives the default prior's scale.
NormalGammaPrior FitNormalGammaPrior(std::span<const double> xs);

// Textbook Student-t log density (lgamma based); the reference the fast form is tested against.
double StudentTLogPdf(double x, double nu, double loc, double scale);

// Sufficient statistics of the Normal-Gamma posterior for a set of run lengths, ascending, the
// first being 0 (the prior). kappa and alpha follow from the run length (kappa0 + r, alpha0 + r/2),
// so only mu, beta and log(beta) are stored.
//
// The arrays are padded to whole blocks of kLanes (plus one block for the shift), so the growth
// step runs four runs at a time (vec_math.h): log(beta') is a four-lane log with the same bits on
// every x86-64 (docs/stats.md, "Cost and pruning").
class NormalGammaRuns {
 public:
  static constexpr size_t kLanes = 4;
  // Smallest multiple of kLanes >= n.
  static constexpr size_t RoundUp(size_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

  explicit NormalGammaRuns(const NormalGammaPrior& prior);

  // Back to a single run of length 0 holding the prior.
  void Reset();

  // One BOCD growth step. For every kept run i (length r_i) computes log p(x | run i), kept as
  // log_pdf()[i + 1], updates run i's statistics with x and moves it to index i + 1 with length
  // r_i + 1; then inserts a fresh prior run of length 0 at index 0. Returns the largest log
  // density.
  double ObserveAndGrow(double x);

  // The log densities of the last ObserveAndGrow, aligned with the runs (index 0, the new prior
  // run, is unspecified).
  std::span<const double> log_pdf() const { return {log_pdf_.data(), n_}; }
  // The same array, readable up to index RoundUp(size() - 1) (-inf past size()): the blocks of
  // kLanes the detector weighs.
  const double* padded_log_pdf() const { return log_pdf_.data(); }

  // Keeps only the runs at the given indices (strictly ascending), in order.
  void Keep(std::span<const uint32_t> indices);
  // Drops the run at index i; those after it move down one.
  void Drop(size_t i);

  size_t size() const { return n_; }
  std::span<const size_t> run_lengths() const { return {run_length_.data(), n_}; }
  double mu(size_t i) const { return mu_[i]; }
  double beta(size_t i) const { return beta_[i]; }
  double kappa(size_t i) const { return prior_.kappa0 + static_cast<double>(run_length_[i]); }
  double alpha(size_t i) const { return prior_.alpha0 + 0.5 * static_cast<double>(run_length_[i]); }
  const NormalGammaPrior& prior() const { return prior_; }

  // c(r) of the predictive log pdf (see file comment); exposed for tests.
  double LogPdfConstant(size_t run_length);

 private:
  void ExtendTable(size_t run_length);

  NormalGammaPrior prior_;
  double log_beta0_;
  size_t n_ = 0;  // runs kept; the arrays below are longer (padding)
  // Structure of arrays, one entry per kept run, ascending run length.
  std::vector<size_t> run_length_;
  std::vector<double> mu_;
  std::vector<double> beta_;
  std::vector<double> log_beta_;
  std::vector<double> log_pdf_;
  std::vector<double> constant_;  // scratch: c(r) per run for the growth step
  // Per run length r: lgamma(alpha_r + 1/2) - lgamma(alpha_r), and c(r). Grown lazily.
  std::vector<double> gamma_ratio_;
  std::vector<double> log_pdf_constant_;
};

}  // namespace prism::analysis
