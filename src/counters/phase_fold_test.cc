#include "counters/phase_fold.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace prism::counters {
namespace {

// One iteration's traffic as bursts: (start phase, end phase, share of the iteration's bytes).
struct Burst {
  double from, to, share;
};

// Bytes of `bytes_per_iteration` moved up to phase p (iteration units, any number of iterations).
double Cumulative(const std::vector<Burst>& bursts, double p, double bytes_per_iteration) {
  const double whole = std::floor(p), f = p - whole;
  double in = 0;
  for (const Burst& b : bursts)
    in += b.share * std::clamp((f - b.from) / (b.to - b.from), 0.0, 1.0);
  return (whole + in) * bytes_per_iteration;
}

// Deltas of polls every `poll_s` (from `offset_s`) over `iterations` of `period_s`.
std::vector<PhaseDelta> Polled(const std::vector<Burst>& bursts, double period_s,
                               size_t iterations, double poll_s, double offset_s) {
  std::vector<PhaseDelta> out;
  for (double t = offset_s; t + poll_s <= period_s * iterations; t += poll_s) {
    const double a = t / period_s, b = (t + poll_s) / period_s;
    out.push_back({a, b, Cumulative(bursts, b, 1e9) - Cumulative(bursts, a, 1e9)});
  }
  return out;
}

TEST(FoldByPhase, ResolvesABurstShorterThanAPollFromPollsNotLockedToTheIteration) {
  // A 4.37 s iteration: 10% of its bytes in 0.1 s at phase 0.2, the rest in 0.15 s at 0.6; polls
  // every second, so no single delta tells the early burst from the main one.
  const std::vector<Burst> bursts = {{0.20, 0.223, 0.1}, {0.60, 0.634, 0.9}};
  std::vector<PhaseDelta> deltas = Polled(bursts, 4.37, 40, 1.0, 0.3);
  ASSERT_GE(deltas.size(), 150u);
  const std::vector<double> g = FoldByPhase(deltas, 50);
  ASSERT_EQ(g.size(), 50u);
  const double total = std::accumulate(g.begin(), g.end(), 0.0);
  EXPECT_NEAR(total, 1e9, 0.02e9);  // one iteration's bytes
  double early = 0, between = 0;
  for (size_t i = 0; i < 50; ++i) {
    const double p = (i + 0.5) / 50;
    if (p > 0.16 && p < 0.27) early += g[i];
    if (p > 0.30 && p < 0.55) between += g[i];
  }
  EXPECT_NEAR(early / total, 0.1, 0.02);
  EXPECT_LT(between / total, 0.01);
  // The early bytes sit 0.4 iterations (1.7 s) before the burst: bins 18-22 before its peak.
  EXPECT_NEAR(EarlyShare(g, 22, 3), 0.1, 0.02);
}

TEST(FoldByPhase, TooFewDeltasForTheBinsIsEmpty) {
  EXPECT_TRUE(FoldByPhase({{0, 0.5, 1}, {0.5, 1, 1}}, 10).empty());
}

TEST(IterationClock, EachIterationBetweenItsOwnBoundaries) {
  const IterationClock c({1000, 5000, 11000});
  EXPECT_DOUBLE_EQ(c.PhaseAt(1000), 0);
  EXPECT_DOUBLE_EQ(c.PhaseAt(3000), 0.5);
  EXPECT_DOUBLE_EQ(c.PhaseAt(8000), 1.5);
  EXPECT_DOUBLE_EQ(c.PhaseAt(11000), 2);
  EXPECT_TRUE(std::isnan(c.PhaseAt(999)));
  EXPECT_TRUE(std::isnan(c.PhaseAt(11001)));
}

TEST(EarlyShare, BytesInTheLeadBeforeTheBusiestPairOfBins) {
  std::vector<double> g(20, 0);
  g[15] = 40;
  g[16] = 40;
  g[10] = 15;  // 5 bins before the peak pair's first bin
  g[2] = 5;    // 13 bins before: outside a lead of 8
  EXPECT_DOUBLE_EQ(EarlyShare(g, 8, 2), 0.15);
  EXPECT_DOUBLE_EQ(EarlyShare(g, 13, 2), 0.20);
  EXPECT_DOUBLE_EQ(EarlyShare(g, 8, 6), 0.0);  // the margin excludes it
  EXPECT_DOUBLE_EQ(EarlyShare(std::vector<double>(5, 0), 3, 1), 0.0);
}

}  // namespace
}  // namespace prism::counters
