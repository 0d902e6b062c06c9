#include "analysis/changepoint/bocd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "analysis/changepoint/changepoint_metrics.h"

namespace prism::analysis {
namespace {

struct Series {
  std::vector<double> xs;
  std::vector<size_t> truth;  // first index of each new segment
};

// Piecewise-constant mean with N(0, 1) noise (ruptures' pw_constant): segment lengths uniform in
// [30, 150], levels uniform in [-10, 10] with every jump at least min_jump.
Series PwConstant(uint64_t seed, int segments, double min_jump) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  std::uniform_int_distribution<int> length(30, 150);
  std::uniform_real_distribution<double> level(-10, 10);
  Series s;
  double mu = 0;
  for (int k = 0; k < segments; ++k) {
    if (k > 0) {
      s.truth.push_back(s.xs.size());
      double next;
      do next = level(rng);
      while (std::fabs(next - mu) < min_jump);
      mu = next;
    }
    const int n = length(rng);
    for (int i = 0; i < n; ++i) s.xs.push_back(mu + noise(rng));
  }
  return s;
}

// Like the pipeline's log inter-flow intervals of one GPU pair: 25..34 short intra-step gaps
// ~ log(1e-4 s) (30% jitter), then one long inter-step gap ~ log(0.5 s). truth = the long gaps.
Series StepIntervals(uint64_t seed, int steps) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  std::uniform_int_distribution<int> per_step(25, 34);
  Series s;
  for (int k = 0; k < steps; ++k) {
    const int n = per_step(rng);
    for (int i = 0; i < n; ++i) s.xs.push_back(std::log(1e-4) + 0.3 * noise(rng));
    s.truth.push_back(s.xs.size());
    s.xs.push_back(std::log(0.5) + 0.05 * noise(rng));
  }
  return s;
}

std::vector<double> Stationary(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> xs(n);
  for (double& x : xs) x = noise(rng);
  return xs;
}

double Sum(std::span<const double> p) { return std::accumulate(p.begin(), p.end(), 0.0); }

TEST(BocdTest, MeanShiftsLargeJumpsDefaultRule) {
  constexpr int kSeeds = 100;
  double precision = 0, recall = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    const Series s = PwConstant(seed, 10, /*min_jump=*/6);
    BocdOptions opts;
    opts.prior = FitNormalGammaPrior(s.xs);
    const PrecisionRecall pr =
        ChangePointPrecisionRecall(s.truth, DetectChangePoints(s.xs, opts), /*margin=*/2);
    precision += pr.precision;
    recall += pr.recall;
  }
  EXPECT_GE(precision / kSeeds, 0.95);
  EXPECT_GE(recall / kSeeds, 0.95);
}

TEST(BocdTest, MeanShiftsModerateJumpsLongerLag) {
  // 3-sigma jumps cannot be confirmed at 0.95 within 2 points; a lag of 5 points can.
  constexpr int kSeeds = 100;
  double precision = 0, recall = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    const Series s = PwConstant(1000 + seed, 10, /*min_jump=*/3);
    BocdOptions opts;
    opts.prior = FitNormalGammaPrior(s.xs);
    opts.lag = 5;
    const PrecisionRecall pr =
        ChangePointPrecisionRecall(s.truth, DetectChangePoints(s.xs, opts), /*margin=*/2);
    precision += pr.precision;
    recall += pr.recall;
  }
  EXPECT_GE(precision / kSeeds, 0.9);
  EXPECT_GE(recall / kSeeds, 0.9);
}

TEST(BocdTest, FittedPriorMakesDetectionUnitFree) {
  for (int seed = 0; seed < 20; ++seed) {
    const Series s = PwConstant(2000 + seed, 8, 4);
    std::vector<double> scaled = s.xs;
    for (double& x : scaled) x = 1e-3 * x - 9.2;  // like log seconds of sub-ms intervals
    BocdOptions a, b;
    a.prior = FitNormalGammaPrior(s.xs);
    b.prior = FitNormalGammaPrior(scaled);
    const std::vector<size_t> fa = DetectChangePoints(s.xs, a);
    const std::vector<size_t> fb = DetectChangePoints(scaled, b);
    ASSERT_FALSE(fa.empty());
    EXPECT_LE(HausdorffDistance(fa, fb), 1.0) << "seed " << seed;
  }
}

TEST(BocdTest, VarianceIncrease) {
  // sd 1 -> 5 -> 1 ... every 100 points. A variance change needs more points to confirm than a
  // big mean shift, so lag 10; locations within +-5.
  constexpr int kSeeds = 50;
  double precision = 0, recall = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937_64 rng(3000 + seed);
    std::normal_distribution<double> noise(0, 1);
    Series s;
    for (int k = 0; k < 6; ++k) {
      if (k > 0) s.truth.push_back(s.xs.size());
      const double sd = k % 2 == 1 ? 5.0 : 1.0;
      for (int i = 0; i < 100; ++i) s.xs.push_back(sd * noise(rng));
    }
    BocdOptions opts;
    opts.lag = 10;
    const PrecisionRecall pr =
        ChangePointPrecisionRecall(s.truth, DetectChangePoints(s.xs, opts), /*margin=*/5);
    precision += pr.precision;
    recall += pr.recall;
  }
  EXPECT_GE(precision / kSeeds, 0.9);
  EXPECT_GE(recall / kSeeds, 0.75);
}

TEST(BocdTest, IntervalsCutAtTheLongGaps) {
  for (int seed = 0; seed < 20; ++seed) {
    const Series s = StepIntervals(4000 + seed, 40);
    for (bool fitted : {false, true}) {
      BocdOptions opts;
      if (fitted) opts.prior = FitNormalGammaPrior(s.xs);
      const std::vector<size_t> found = DetectChangePoints(s.xs, opts);
      // The segment starts exactly at the long gap: margin 0.
      const PrecisionRecall pr = ChangePointPrecisionRecall(s.truth, found, /*margin=*/0);
      EXPECT_GE(pr.precision, 0.97) << "seed " << seed << " fitted " << fitted;
      EXPECT_GE(pr.recall, 0.97) << "seed " << seed << " fitted " << fitted;
    }
  }
}

TEST(BocdTest, StationarySeriesHasNoFalsePositives) {
  size_t false_positives = 0, points = 0;
  for (int seed = 0; seed < 10; ++seed) {
    const std::vector<double> xs = Stationary(5000 + seed, 5000);
    BocdOptions opts;
    opts.max_run_lengths = 64;
    false_positives += DetectChangePoints(xs, opts).size();
    opts.prior = FitNormalGammaPrior(xs);
    false_positives += DetectChangePoints(xs, opts).size();
    points += 2 * xs.size();
  }
  // A 0.95 rule over the short window must stay far below one alarm per 1000 points.
  EXPECT_LE(static_cast<double>(false_positives) / static_cast<double>(points), 1e-4);
}

TEST(BocdTest, PosteriorIsNormalisedAndSorted) {
  const Series s = PwConstant(6000, 6, 4);
  for (size_t cap : {size_t{0}, size_t{16}}) {
    BocdOptions opts;
    opts.max_run_lengths = cap;
    BocdDetector d(opts);
    for (double x : s.xs) {
      const std::span<const double> p = d.Step(x);
      const std::span<const size_t> r = d.run_lengths();
      ASSERT_EQ(p.size(), r.size());
      ASSERT_NEAR(Sum(p), 1.0, 1e-9);
      ASSERT_EQ(r[0], 0u);
      ASSERT_TRUE(std::is_sorted(r.begin(), r.end()));
      ASSERT_LE(r.back(), d.t());
      ASSERT_TRUE(std::all_of(p.begin(), p.end(), [](double v) { return v >= 0 && v <= 1; }));
    }
  }
}

// docs/stats.md, Detection rule: in the standard recursion P(r_t = 0 | x_1:t) is the hazard at
// every t, whatever the data, so "P(change) > 0.95" on r_t = 0 never fires. The lagged rule does.
TEST(BocdTest, ChangeMassEqualsHazardButLaggedRuleFires) {
  std::mt19937_64 rng(7000);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> xs;
  for (int i = 0; i < 200; ++i) xs.push_back((i < 100 ? 0.0 : 8.0) + noise(rng));
  for (double hazard : {0.01, 0.2}) {
    BocdOptions opts;
    opts.hazard = hazard;
    opts.prune_mass = 0;  // no renormalisation after pruning: the identity is then exact
    opts.prior = FitNormalGammaPrior(xs);
    BocdDetector d(opts);
    LaggedChangeRule rule(opts.lag, opts.threshold);
    std::vector<size_t> declared_at, starts;
    double max_change_mass = 0;
    for (double x : xs) {
      const std::span<const double> p = d.Step(x);
      ASSERT_EQ(d.run_lengths()[0], 0u);
      EXPECT_NEAR(p[0], hazard, 1e-12 * hazard);
      max_change_mass = std::max(max_change_mass, p[0]);
      if (std::optional<size_t> s = rule.Observe(d)) {
        declared_at.push_back(d.t());
        starts.push_back(*s);
      }
    }
    EXPECT_LT(max_change_mass, opts.threshold);  // the naive rule never fires
    ASSERT_EQ(starts.size(), 1u) << "hazard " << hazard;
    EXPECT_EQ(starts[0], 100u);
    // Declared once the first post-change points were seen, at most w points late.
    EXPECT_GE(declared_at[0], 101u);
    EXPECT_LE(declared_at[0], 100u + static_cast<size_t>(opts.lag));
  }
}

// Exact mapping of detections to segment starts, on noise-free-looking steps.
std::vector<double> Steps(std::initializer_list<std::pair<size_t, double>> starts_levels,
                          size_t n) {
  std::mt19937_64 rng(8000);
  std::normal_distribution<double> noise(0, 0.1);
  std::vector<double> xs(n);
  for (size_t i = 0; i < n; ++i) {
    double level = 0;
    for (const auto& [start, l] : starts_levels) {
      if (i >= start) level = l;
    }
    xs[i] = level + noise(rng);
  }
  return xs;
}

TEST(BocdTest, DetectionIndexIsFirstPointOfNewSegment) {
  const auto detect = [](const std::vector<double>& xs) {
    BocdOptions opts;
    opts.prior = FitNormalGammaPrior(xs);
    return DetectChangePoints(xs, opts);
  };
  EXPECT_EQ(detect(Steps({{50, 5}}, 100)), (std::vector<size_t>{50}));
  // Two changes w + 2 = 4 points apart are both reported.
  EXPECT_EQ(detect(Steps({{50, 5}, {54, -5}}, 100)), (std::vector<size_t>{50, 54}));
  // A one-point spike is one change (its start); the return right after it is within w of it and
  // is suppressed, so reported starts are always more than w apart.
  EXPECT_EQ(detect(Steps({{50, 5}, {51, 0}}, 100)), (std::vector<size_t>{50}));
  // A change at the very last point is still reported; nothing is reported at index 0.
  EXPECT_EQ(detect(Steps({{99, 5}}, 100)), (std::vector<size_t>{99}));
  EXPECT_TRUE(detect(Steps({}, 3)).empty());
  EXPECT_TRUE(detect({}).empty());
}

TEST(BocdTest, PruningBoundsKeptRunLengths) {
  const std::vector<double> xs = Stationary(9000, 3000);
  {
    BocdOptions opts;
    opts.max_run_lengths = 20;
    BocdDetector d(opts);
    for (double x : xs) ASSERT_LE(d.Step(x).size(), 20u);
  }
  {
    // Mass pruning alone: every kept r > 0 holds >= prune_mass, so at most 1/prune_mass + 1.
    BocdOptions opts;
    opts.prune_mass = 1e-2;
    BocdDetector d(opts);
    size_t most = 0;
    for (double x : xs) most = std::max(most, d.Step(x).size());
    EXPECT_LE(most, 101u);
  }
  {
    // Without a cap a stationary series keeps (almost) every run length: why the cap exists.
    BocdOptions opts;
    BocdDetector d(opts);
    for (double x : xs) d.Step(x);
    EXPECT_GT(d.run_lengths().size(), 1000u);
  }
}

TEST(BocdTest, SmallCapStillCutsIntervals) {
  const Series s = StepIntervals(9100, 40);
  BocdOptions opts;
  opts.max_run_lengths = 8;
  const PrecisionRecall pr = ChangePointPrecisionRecall(s.truth, DetectChangePoints(s.xs, opts), 0);
  EXPECT_GE(pr.precision, 0.97);
  EXPECT_GE(pr.recall, 0.97);
}

// The step at which the cap first binds: the capped detector holds what the unlimited one holds
// at that step, less its least probable run length other than r = 0, renormalised.
TEST(BocdTest, CapDropsTheLeastProbableRunLength) {
  for (const Series& s : {StepIntervals(9600, 30), PwConstant(9700, 8, 4)}) {
    for (size_t cap : {size_t{2}, size_t{5}, size_t{8}}) {
      BocdOptions unlimited, capped;
      unlimited.prune_mass = capped.prune_mass = 0;  // only the cap drops run lengths
      capped.max_run_lengths = cap;
      BocdDetector du(unlimited), dc(capped);
      for (size_t t = 0; t + 1 < cap; ++t) {  // the cap binds at the step that makes cap + 1
        du.Step(s.xs[t]);
        dc.Step(s.xs[t]);
      }
      const std::span<const double> p = du.Step(s.xs[cap - 1]);
      const std::span<const double> q = dc.Step(s.xs[cap - 1]);
      const std::vector<size_t> rp(du.run_lengths().begin(), du.run_lengths().end());
      const std::vector<size_t> rq(dc.run_lengths().begin(), dc.run_lengths().end());
      ASSERT_EQ(rp.size(), cap + 1);
      ASSERT_EQ(rq.size(), cap);
      size_t least = 1;
      for (size_t i = 1; i < p.size(); ++i)
        if (p[i] <= p[least]) least = i;
      std::vector<size_t> want = rp;
      want.erase(want.begin() + long(least));
      EXPECT_EQ(rq, want) << "cap " << cap;
      const double kept = 1 - p[least];
      for (size_t i = 0, j = 0; i < p.size(); ++i) {
        if (i == least) continue;
        EXPECT_NEAR(q[j++], p[i] / kept, 1e-12) << "cap " << cap << " run length " << rp[i];
      }
    }
  }
}

TEST(BocdTest, ResetStartsOver) {
  const Series a = PwConstant(9200, 4, 4);
  const Series b = PwConstant(9300, 4, 4);
  BocdOptions opts;
  BocdDetector reused(opts);
  for (double x : a.xs) reused.Step(x);
  reused.Reset();
  EXPECT_EQ(reused.t(), 0u);
  ASSERT_EQ(reused.run_lengths().size(), 1u);
  EXPECT_NEAR(reused.posterior()[0], 1.0, 1e-15);
  BocdDetector fresh(opts);
  for (double x : b.xs) {
    const std::span<const double> p = reused.Step(x);
    const std::span<const double> q = fresh.Step(x);
    ASSERT_EQ(p.size(), q.size());
    ASSERT_TRUE(std::equal(reused.run_lengths().begin(), reused.run_lengths().end(),
                           fresh.run_lengths().begin()));
    for (size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(p[i], q[i], 1e-12);
  }
  EXPECT_EQ(reused.t(), b.xs.size());
}

TEST(BocdTest, GenerousCapMatchesUnlimited) {
  for (const Series& s : {StepIntervals(9400, 30), PwConstant(9500, 8, 4)}) {
    BocdOptions unlimited, capped;
    capped.max_run_lengths = 400;
    BocdDetector du(unlimited), dc(capped);
    size_t most = 0;
    for (double x : s.xs) {
      const std::span<const double> p = du.Step(x);
      const std::span<const double> q = dc.Step(x);
      most = std::max(most, p.size());
      ASSERT_EQ(p.size(), q.size());
      for (size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(p[i], q[i], 1e-12);
    }
    EXPECT_LT(most, capped.max_run_lengths);  // the cap never bit: the test compares like with like
    EXPECT_EQ(DetectChangePoints(s.xs, unlimited), DetectChangePoints(s.xs, capped));
  }
}

}  // namespace
}  // namespace prism::analysis
