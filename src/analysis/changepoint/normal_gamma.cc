#include "analysis/changepoint/normal_gamma.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "analysis/changepoint/vec_math.h"
#include "core/status.h"

namespace prism::analysis {
namespace {

// Run lengths beyond this use lgamma directly instead of the table, so a detector that never
// sees a change (service mode) does not grow the table without bound.
constexpr size_t kMaxTableSize = size_t{1} << 20;
// The table recurrence G(r+1) = log(alpha_r) - G(r) is re-seeded from lgamma this often so
// rounding errors cannot accumulate.
constexpr size_t kReseedEvery = 64;
constexpr double kHalfLog2Pi = 0.91893853320467274178;  // log(2 pi) / 2

double GammaRatio(double alpha) { return std::lgamma(alpha + 0.5) - std::lgamma(alpha); }

}  // namespace

double StudentTLogPdf(double x, double nu, double loc, double scale) {
  const double z = (x - loc) / scale;
  return std::lgamma(0.5 * (nu + 1)) - std::lgamma(0.5 * nu) -
         0.5 * std::log(nu * std::numbers::pi) - std::log(scale) -
         0.5 * (nu + 1) * std::log1p(z * z / nu);
}

NormalGammaPrior FitNormalGammaPrior(std::span<const double> xs) {
  NormalGammaPrior prior;
  if (xs.empty()) return prior;
  std::vector<double> v(xs.begin(), xs.end());
  const auto mid = v.begin() + static_cast<ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  prior.mu0 = *mid;
  double mean = 0;
  for (double x : xs) mean += x;
  mean /= static_cast<double>(xs.size());
  double var = 0;
  for (double x : xs) var += (x - mean) * (x - mean);
  var /= static_cast<double>(xs.size());
  double noise_var = 0;
  if (xs.size() >= 2) {
    v.resize(xs.size() - 1);
    for (size_t i = 1; i < xs.size(); ++i) v[i - 1] = std::fabs(xs[i] - xs[i - 1]);
    const auto dmid = v.begin() + static_cast<ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), dmid, v.end());
    // MAD of N(0, 2 s^2) differences: median |d| = 0.6745 * sqrt(2) * s.
    const double s = *dmid / (0.6744897501960817 * std::numbers::sqrt2);
    noise_var = s * s;
  }
  if (!(noise_var > 0)) noise_var = var > 0 ? var : 1.0;
  if (!(var > 0)) var = noise_var;
  prior.kappa0 = std::clamp(noise_var / var, 1e-4, 1.0);
  prior.beta0 = prior.alpha0 * noise_var;
  return prior;
}

NormalGammaRuns::NormalGammaRuns(const NormalGammaPrior& prior)
    : prior_(prior), log_beta0_(std::log(prior.beta0)) {
  PRISM_CHECK(prior.kappa0 > 0 && prior.alpha0 > 0 && prior.beta0 > 0);
  Reset();
}

void NormalGammaRuns::Reset() {
  n_ = 1;
  if (run_length_.empty()) {
    const size_t padded = 2 * kLanes;
    run_length_.resize(padded);
    mu_.resize(padded);
    beta_.resize(padded);
    log_beta_.resize(padded);
    log_pdf_.resize(padded);
    constant_.resize(padded);
  }
  run_length_[0] = 0;
  mu_[0] = prior_.mu0;
  beta_[0] = prior_.beta0;
  log_beta_[0] = log_beta0_;
}

void NormalGammaRuns::ExtendTable(size_t run_length) {
  const size_t want = std::min(run_length + 1, kMaxTableSize);
  if (gamma_ratio_.size() >= want) return;
  // Amortised doubling keeps the number of reallocations logarithmic.
  if (gamma_ratio_.capacity() < want) {
    const size_t cap = std::min(std::max<size_t>(want, 2 * gamma_ratio_.capacity()), kMaxTableSize);
    gamma_ratio_.reserve(std::max<size_t>(cap, 64));
    log_pdf_constant_.reserve(std::max<size_t>(cap, 64));
  }
  for (size_t r = gamma_ratio_.size(); r < want; ++r) {
    const double alpha = prior_.alpha0 + 0.5 * static_cast<double>(r);
    const double kappa = prior_.kappa0 + static_cast<double>(r);
    double g;
    if (r % kReseedEvery == 0) {
      g = GammaRatio(alpha);
    } else {
      // Gamma(a + 1) = a Gamma(a), with a = alpha_{r-1} = alpha - 1/2.
      g = std::log(alpha - 0.5) - gamma_ratio_[r - 1];
    }
    gamma_ratio_.push_back(g);
    log_pdf_constant_.push_back(g + 0.5 * std::log(kappa / (kappa + 1)) - kHalfLog2Pi);
  }
}

double NormalGammaRuns::LogPdfConstant(size_t run_length) {
  if (run_length >= log_pdf_constant_.size()) ExtendTable(run_length);
  if (run_length < log_pdf_constant_.size()) return log_pdf_constant_[run_length];
  const double alpha = prior_.alpha0 + 0.5 * static_cast<double>(run_length);
  const double kappa = prior_.kappa0 + static_cast<double>(run_length);
  return GammaRatio(alpha) + 0.5 * std::log(kappa / (kappa + 1)) - kHalfLog2Pi;
}

namespace {

// The growth step over runs [0, padded), four at a time, from the top so that the shift to index
// i + 1 happens in place (a block is loaded before it is stored, and stores reach only blocks
// already read). Same arithmetic as the scalar form in the file comment, with Log4 for std::log;
// returns the largest log density.
__attribute__((target_clones("avx2", "default"))) double GrowRuns(
    size_t padded, double x, double kappa0, double alpha0, size_t* rl, double* mu, double* beta,
    double* log_beta, const double* constant, double* log_pdf) {
  using namespace vec;
  V4d max_lp = Splat(-HUGE_VAL);
  for (size_t i = padded; i > 0;) {
    i -= NormalGammaRuns::kLanes;
    const V4u r = LoadU(reinterpret_cast<const uint64_t*>(rl + i));
    const V4d rd = U52ToDouble(r);
    const V4d kappa = kappa0 + rd;
    const V4d alpha = alpha0 + 0.5 * rd;
    const V4d d = x - Load(mu + i);
    const V4d beta_new = Load(beta + i) + kappa * d * d / (2 * (kappa + 1));
    const V4d log_beta_new = Log4(beta_new);
    const V4d lp = Load(constant + i) + alpha * Load(log_beta + i) - (alpha + 0.5) * log_beta_new;
    max_lp = Max(max_lp, lp);
    Store(log_pdf + i + 1, lp);
    Store(mu + i + 1, Load(mu + i) + d / (kappa + 1));
    Store(beta + i + 1, beta_new);
    Store(log_beta + i + 1, log_beta_new);
    StoreU(reinterpret_cast<uint64_t*>(rl + i + 1), r + 1);
  }
  return std::max(std::max(max_lp[0], max_lp[1]), std::max(max_lp[2], max_lp[3]));
}

}  // namespace

double NormalGammaRuns::ObserveAndGrow(double x) {
  const size_t n = n_;
  const size_t padded = RoundUp(n);
  // Reads reach index padded - 1, writes index padded.
  if (run_length_.size() < padded + kLanes) {
    const size_t want = std::max(padded + kLanes, 2 * run_length_.size());
    run_length_.resize(want);
    mu_.resize(want);
    beta_.resize(want);
    log_beta_.resize(want);
    log_pdf_.resize(want);
    constant_.resize(want);
  }
  ExtendTable(run_length_[n - 1]);  // ascending: the last run is the longest
  const double* table = log_pdf_constant_.data();
  const size_t table_size = log_pdf_constant_.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t r = run_length_[i];
    constant_[i] = r < table_size ? table[r] : LogPdfConstant(r);
  }
  // Padding lanes: a harmless prior run whose log density is -inf (never the maximum, weight 0).
  for (size_t i = n; i < padded; ++i) {
    run_length_[i] = 0;
    mu_[i] = prior_.mu0;
    beta_[i] = prior_.beta0;
    log_beta_[i] = log_beta0_;
    constant_[i] = -HUGE_VAL;
  }
  const double max_log_pdf =
      GrowRuns(padded, x, prior_.kappa0, prior_.alpha0, run_length_.data(), mu_.data(),
               beta_.data(), log_beta_.data(), constant_.data(), log_pdf_.data());
  run_length_[0] = 0;
  mu_[0] = prior_.mu0;
  beta_[0] = prior_.beta0;
  log_beta_[0] = log_beta0_;
  n_ = n + 1;
  return max_log_pdf;
}

void NormalGammaRuns::Keep(std::span<const uint32_t> indices) {
  size_t k = 0;
  for (uint32_t i : indices) {
    run_length_[k] = run_length_[i];
    mu_[k] = mu_[i];
    beta_[k] = beta_[i];
    log_beta_[k] = log_beta_[i];
    ++k;
  }
  n_ = k;
}

void NormalGammaRuns::Drop(size_t i) {
  for (auto* v : {&mu_, &beta_, &log_beta_})
    std::copy(v->begin() + long(i) + 1, v->begin() + long(n_), v->begin() + long(i));
  std::copy(run_length_.begin() + long(i) + 1, run_length_.begin() + long(n_),
            run_length_.begin() + long(i));
  --n_;
}

}  // namespace prism::analysis
