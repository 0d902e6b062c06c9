#include "analysis/classify/step_order.h"

#include <gtest/gtest.h>

namespace prism::analysis {
namespace {

constexpr int64_t kMs = 1'000'000;

Transfer T(int64_t start_ms, int64_t dur_ms, bool from_a) {
  return {start_ms * kMs, (start_ms + dur_ms) * kMs, 1 << 20, 1, from_a};
}

// Steps of 1 s ending at k * 1000 ms. A pipeline pair: two forwards alone, two beats with both
// ways together, two backwards alone.
std::vector<Transfer> PipelineSteps(int steps) {
  std::vector<Transfer> ts;
  for (int k = 0; k < steps; ++k) {
    const int64_t t0 = k * 1000 + 50;
    for (int64_t t : {t0, t0 + 30}) ts.push_back(T(t, 1, true));
    for (int64_t t : {t0 + 200, t0 + 300}) {
      ts.push_back(T(t, 1, true));
      ts.push_back(T(t, 1, false));
    }
    for (int64_t t : {t0 + 500, t0 + 560}) ts.push_back(T(t, 1, false));
  }
  return ts;
}

// A collective of two: four chunks each way, both ways together, at the end of each step.
std::vector<Transfer> CollectiveSteps(int steps, bool a_early) {
  std::vector<Transfer> ts;
  for (int k = 0; k < steps; ++k) {
    const int64_t t0 = k * 1000 + 900;
    // A rank that arrives late: the other's first chunk goes alone.
    if (a_early) ts.push_back(T(t0 - 5, 1, true));
    for (int c = 0; c < 4; ++c) {
      ts.push_back(T(t0 + 3 * c, 2, true));
      ts.push_back(T(t0 + 3 * c, 2, false));
    }
  }
  return ts;
}

std::vector<int64_t> Ends(int steps) {
  std::vector<int64_t> ends;
  for (int k = 0; k <= steps; ++k) ends.push_back(k * 1000 * kMs + 950 * kMs);
  return ends;
}

TEST(StepOrder, PipelineOpensForwardAndClosesBackwardEveryStep) {
  const WindowOrder o = MeasureOrderInWindows(PipelineSteps(10), Ends(10));
  EXPECT_EQ(o.both_way, 9u);  // the first step starts before the first window
  EXPECT_EQ(o.ordered_from_a, 9);
}

TEST(StepOrder, CollectiveIsNotOrderedEvenWithALateRank) {
  for (bool late : {false, true}) {
    const WindowOrder o = MeasureOrderInWindows(CollectiveSteps(10, late), Ends(10));
    EXPECT_GE(o.both_way, 9u);
    EXPECT_EQ(o.ordered_from_a, 0) << late;
  }
}

}  // namespace
}  // namespace prism::analysis
