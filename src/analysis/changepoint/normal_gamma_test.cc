#include "analysis/changepoint/normal_gamma.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace prism::analysis {
namespace {

TEST(BocdNormalGammaTest, FastLogPdfMatchesStudentT) {
  const NormalGammaPrior prior{.mu0 = 0.5, .kappa0 = 0.3, .alpha0 = 1.5, .beta0 = 2.0};
  NormalGammaRuns runs(prior);
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(1, 2);
  for (int step = 0; step < 300; ++step) {
    const double x = noise(rng);
    // Expected predictive of every run from its statistics before x.
    std::vector<double> expected(runs.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      const double a = runs.alpha(i), k = runs.kappa(i), b = runs.beta(i);
      expected[i] = StudentTLogPdf(x, 2 * a, runs.mu(i), std::sqrt(b * (k + 1) / (a * k)));
    }
    const double max_lp = runs.ObserveAndGrow(x);
    const std::span<const double> log_pdf = runs.log_pdf();
    ASSERT_EQ(log_pdf.size(), expected.size() + 1);
    double best = -HUGE_VAL;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(log_pdf[i + 1], expected[i], 1e-9) << "step " << step << " run " << i;
      best = std::max(best, log_pdf[i + 1]);
    }
    EXPECT_NEAR(max_lp, best, 1e-12);
  }
}

TEST(BocdNormalGammaTest, StatisticsMatchBatchPosterior) {
  const NormalGammaPrior prior{.mu0 = -1, .kappa0 = 0.5, .alpha0 = 1, .beta0 = 3};
  NormalGammaRuns runs(prior);
  std::mt19937_64 rng(2);
  std::normal_distribution<double> noise(4, 0.5);
  std::vector<double> xs;
  for (int i = 0; i < 50; ++i) {
    xs.push_back(noise(rng));
    runs.ObserveAndGrow(xs.back());
  }
  // The longest run (the last entry) has seen all of xs.
  const size_t last = runs.size() - 1;
  ASSERT_EQ(runs.run_lengths()[last], xs.size());
  const double n = static_cast<double>(xs.size());
  double mean = 0;
  for (double x : xs) mean += x / n;
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  EXPECT_NEAR(runs.mu(last), (prior.kappa0 * prior.mu0 + n * mean) / (prior.kappa0 + n), 1e-9);
  EXPECT_NEAR(runs.beta(last),
              prior.beta0 + ss / 2 +
                  prior.kappa0 * n * (mean - prior.mu0) * (mean - prior.mu0) /
                      (2 * (prior.kappa0 + n)),
              1e-9);
  EXPECT_NEAR(runs.kappa(last), prior.kappa0 + n, 1e-12);
  EXPECT_NEAR(runs.alpha(last), prior.alpha0 + n / 2, 1e-12);
  // Run 0 is the prior again.
  EXPECT_EQ(runs.run_lengths()[0], 0u);
  EXPECT_NEAR(runs.mu(0), prior.mu0, 1e-15);
  EXPECT_NEAR(runs.beta(0), prior.beta0, 1e-15);
}

TEST(BocdNormalGammaTest, TabulatedConstantMatchesLgamma) {
  const NormalGammaPrior prior{.mu0 = 0, .kappa0 = 0.01, .alpha0 = 0.7, .beta0 = 1};
  NormalGammaRuns runs(prior);
  for (size_t r : {0, 1, 2, 63, 64, 65, 1000, 5001, 100000}) {
    const double a = prior.alpha0 + 0.5 * static_cast<double>(r);
    const double k = prior.kappa0 + static_cast<double>(r);
    const double expected = std::lgamma(a + 0.5) - std::lgamma(a) + 0.5 * std::log(k / (k + 1)) -
                            0.5 * std::log(2 * M_PI);
    EXPECT_NEAR(runs.LogPdfConstant(r), expected, 1e-10) << "r " << r;
  }
}

TEST(BocdNormalGammaTest, KeepCompactsInOrder) {
  NormalGammaRuns runs(NormalGammaPrior{});
  for (double x : {1.0, 2.0, 3.0, 4.0}) runs.ObserveAndGrow(x);
  ASSERT_EQ(runs.size(), 5u);
  const double mu3 = runs.mu(3);
  const std::vector<uint32_t> keep = {0, 3, 4};
  runs.Keep(keep);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs.run_lengths()[1], 3u);
  EXPECT_EQ(runs.run_lengths()[2], 4u);
  EXPECT_NEAR(runs.mu(1), mu3, 1e-15);
  runs.Reset();
  EXPECT_EQ(runs.size(), 1u);
}

TEST(BocdNormalGammaTest, FittedPriorFollowsUnits) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> xs, ys;
  for (int i = 0; i < 1000; ++i) {
    xs.push_back((i < 500 ? 0 : 6) + noise(rng));
    ys.push_back(1e-3 * xs.back() - 9);
  }
  const NormalGammaPrior a = FitNormalGammaPrior(xs), b = FitNormalGammaPrior(ys);
  EXPECT_NEAR(a.beta0, 1.0, 0.2);  // noise variance, not the variance including the jump
  EXPECT_NEAR(b.beta0 / a.beta0, 1e-6, 1e-12);
  EXPECT_NEAR(b.mu0, 1e-3 * a.mu0 - 9, 1e-9);
  EXPECT_NEAR(a.kappa0, b.kappa0, 1e-9);
  EXPECT_LT(a.kappa0, 0.2);
  const NormalGammaPrior c = FitNormalGammaPrior(std::vector<double>(10, 4.0));
  EXPECT_GT(c.beta0, 0);
  EXPECT_GT(c.kappa0, 0);
  EXPECT_NEAR(c.mu0, 4.0, 1e-12);
}

}  // namespace
}  // namespace prism::analysis
