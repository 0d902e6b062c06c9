#include "analysis/changepoint/vec_math.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace prism::analysis::vec {
namespace {

// Distance in units in the last place (both finite, same sign or zero).
double Ulps(double got, double want) {
  if (got == want) return 0;
  return std::fabs(got - want) / (std::nextafter(std::fabs(want), HUGE_VAL) - std::fabs(want));
}

std::vector<double> Apply(V4d (*fn)(V4d), const std::vector<double>& xs) {
  std::vector<double> out(xs.size());
  for (size_t i = 0; i + 4 <= xs.size(); i += 4) Store(&out[i], fn(Load(&xs[i])));
  return out;
}

V4d CallLog(V4d x) { return Log4(x); }
V4d CallExp(V4d x) { return Exp4(x); }

TEST(VecMathTest, LogWithinOneUlp) {
  std::mt19937_64 rng(1);
  std::vector<double> xs;
  // Log-uniform over the normal range, and dense near 1 (where log is small).
  std::uniform_real_distribution<double> e(-1020, 1020), near(-0.3, 0.42);
  for (int i = 0; i < 200'000; ++i) xs.push_back(std::exp2(e(rng)));
  for (int i = 0; i < 200'000; ++i) xs.push_back(1 + near(rng));
  for (double v : {DBL_MIN, DBL_MAX, 1.0, 2.0, 0.5, M_SQRT1_2, M_SQRT2, std::nextafter(1.0, 2.0),
                   std::nextafter(1.0, 0.0), 0.09, 1e-300})
    xs.push_back(v);
  while (xs.size() % 4) xs.push_back(1.0);
  const std::vector<double> got = Apply(CallLog, xs);
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    worst = std::max(worst, Ulps(got[i], std::log(xs[i])));
    ASSERT_LE(Ulps(got[i], std::log(xs[i])), 1.0) << "x " << xs[i];
  }
  EXPECT_EQ(got[xs.size() - 1], 0.0);  // padding 1.0: log 1 is exactly 0
  RecordProperty("worst_ulps", std::to_string(worst));
  std::printf("Log4: worst %.3f ulp\n", worst);
}

TEST(VecMathTest, ExpWithinOneUlp) {
  std::mt19937_64 rng(2);
  std::vector<double> ys;
  std::uniform_real_distribution<double> wide(-708, 0), narrow(-1, 0);
  for (int i = 0; i < 200'000; ++i) ys.push_back(wide(rng));
  for (int i = 0; i < 200'000; ++i) ys.push_back(narrow(rng));
  for (double v : {0.0, -0.0, -1e-300, -DBL_MIN, -0.34657359027997264, -0.34657359027997265, -1.0,
                   -708.0, -708.39})
    ys.push_back(v);
  while (ys.size() % 4) ys.push_back(0.0);
  const std::vector<double> got = Apply(CallExp, ys);
  double worst = 0;
  for (size_t i = 0; i < ys.size(); ++i) {
    worst = std::max(worst, Ulps(got[i], std::exp(ys[i])));
    ASSERT_LE(Ulps(got[i], std::exp(ys[i])), 1.0) << "y " << ys[i];
  }
  std::printf("Exp4: worst %.3f ulp\n", worst);
  EXPECT_EQ(got[ys.size() - 1], 1.0);  // e^0 is exactly 1
}

TEST(VecMathTest, ExpSubnormalAndUnderflow) {
  std::vector<double> ys = {-720, -745, -746, -800, -1e6, -HUGE_VAL, 5.0, 1e300};
  const std::vector<double> got = Apply(CallExp, ys);
  // Subnormal results: within one subnormal step (2^-1074) of glibc.
  EXPECT_NEAR(got[0], std::exp(-720.0), 5e-324);
  EXPECT_NEAR(got[1], std::exp(-745.0), 5e-324);
  EXPECT_EQ(got[2], 0.0);
  EXPECT_EQ(got[3], 0.0);
  EXPECT_EQ(got[4], 0.0);
  EXPECT_EQ(got[5], 0.0);
  EXPECT_EQ(got[6], 1.0);  // clamped to 0
  EXPECT_EQ(got[7], 1.0);
}

}  // namespace
}  // namespace prism::analysis::vec
