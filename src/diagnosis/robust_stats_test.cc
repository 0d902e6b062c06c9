#include "diagnosis/robust_stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace prism::diagnosis {
namespace {

TEST(InterquartileMean, MeanOfTheMiddleHalf) {
  std::vector<double> v = {100, 1, 2, 3, 4, 5, 6, -50};  // ranks 2..5: 2, 3, 4, 5
  EXPECT_DOUBLE_EQ(InterquartileMean(v), 3.5);
  std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(InterquartileMean(one), 7);
  std::vector<double> none;
  EXPECT_DOUBLE_EQ(InterquartileMean(none), 0);
}

// A link's flows at two rate levels, nearly half and half: one record more or less moves the
// median from one level to the other, the interquartile mean by a few percent.
TEST(InterquartileMean, MovesSmoothlyWhereTheMedianJumps) {
  std::vector<double> more_slow(43, 0.09), more_fast(42, 0.09);  // 43/42 and 42/43 records
  more_slow.insert(more_slow.end(), 42, 0.36);
  more_fast.insert(more_fast.end(), 43, 0.36);
  EXPECT_DOUBLE_EQ(Median(more_slow), 0.09);
  EXPECT_DOUBLE_EQ(Median(more_fast), 0.36);  // one record: 4x
  const double a = InterquartileMean(more_slow), b = InterquartileMean(more_fast);
  EXPECT_NEAR(a, b, 0.05 * b);  // one record: under 5%
  EXPECT_GT(a, 0.09);
  EXPECT_LT(b, 0.36);
}

}  // namespace
}  // namespace prism::diagnosis
