#include "analysis/changepoint/changepoint_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace prism::analysis {
namespace {

using V = std::vector<size_t>;

TEST(ChangePointMetricsTest, Hausdorff) {
  EXPECT_NEAR(HausdorffDistance(V{10, 50}, V{12, 50}), 2.0, 1e-12);
  EXPECT_NEAR(HausdorffDistance(V{10, 50}, V{10}), 40.0, 1e-12);  // 50 is far from 10
  EXPECT_NEAR(HausdorffDistance(V{30, 10}, V{10, 30}), 0.0, 1e-12);  // order does not matter
  EXPECT_NEAR(HausdorffDistance(V{}, V{}), 0.0, 1e-12);
  EXPECT_TRUE(std::isinf(HausdorffDistance(V{}, V{3})));
}

TEST(ChangePointMetricsTest, PrecisionRecallMatchesOneToOne) {
  PrecisionRecall pr = ChangePointPrecisionRecall(V{100, 200}, V{101, 198}, 2);
  EXPECT_NEAR(pr.precision, 1.0, 1e-12);
  EXPECT_NEAR(pr.recall, 1.0, 1e-12);
  // Two detections of one change: one is a false positive.
  pr = ChangePointPrecisionRecall(V{100}, V{99, 101}, 2);
  EXPECT_NEAR(pr.precision, 0.5, 1e-12);
  EXPECT_NEAR(pr.recall, 1.0, 1e-12);
  // Outside the margin.
  pr = ChangePointPrecisionRecall(V{100, 200}, V{103}, 2);
  EXPECT_NEAR(pr.precision, 0.0, 1e-12);
  EXPECT_NEAR(pr.recall, 0.0, 1e-12);
  // Greedy must not steal the only match of a later truth: truths 10, 12; found 12, 14.
  pr = ChangePointPrecisionRecall(V{10, 12}, V{12, 14}, 2);
  EXPECT_NEAR(pr.recall, 1.0, 1e-12);
  // Empty conventions.
  pr = ChangePointPrecisionRecall(V{}, V{}, 2);
  EXPECT_NEAR(pr.precision, 1.0, 1e-12);
  EXPECT_NEAR(pr.recall, 1.0, 1e-12);
  pr = ChangePointPrecisionRecall(V{5}, V{}, 2);
  EXPECT_NEAR(pr.recall, 0.0, 1e-12);
}

}  // namespace
}  // namespace prism::analysis
