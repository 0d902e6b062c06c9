#include "analysis/steps/dp_group_steps.h"

#include <gtest/gtest.h>

#include <random>

namespace prism::analysis {
namespace {

constexpr int64_t kMs = 1'000'000;

struct DpSeries {
  std::vector<DpTransfer> transfers;
  std::vector<int64_t> grad_end;  // per step: end of the gradient collective
};

// `steps` steps of ~`period_ms`. With `zero`: 8 equal buckets reduce-scattered
// during the last backward (5 ms each, `wait_ms` between them), a 30 ms
// optimizer gap, then 8 buckets all-gathered back to back, of a length that
// varies with contention (5-10 ms each). Without: a ring all-reduce of unequal
// buckets (0.35, 0.3, 0.25, 0.1) separated by `wait_ms`.
DpSeries Steps(int steps, double period_ms, bool zero, double wait_ms, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> jitter(0, 0.01);
  std::uniform_real_distribution<double> contention(1, 2);
  DpSeries s;
  int64_t t = 100 * kMs;
  auto bucket = [&](int64_t start, int64_t dur, uint64_t bytes) {
    for (int edge = 0; edge < 16; ++edge)
      s.transfers.push_back({start + edge * 2'000, start + edge * 2'000 + dur, bytes / 16});
    return start + 15 * 2'000 + dur;
  };
  for (int k = 0; k < steps; ++k) {
    int64_t b0 = t;
    int64_t end = t;
    if (zero) {
      for (int b = 0; b < 8; ++b) {
        end = bucket(b0, int64_t(5 * kMs * (1 + jitter(rng))), 1 << 27);
        b0 = end + int64_t(wait_ms * kMs);
      }
      s.grad_end.push_back(end);
      b0 = end + 30 * kMs;
      for (int b = 0; b < 8; ++b)
        b0 = bucket(b0, int64_t(5 * kMs * contention(rng)), 1 << 27) + 10'000;
    } else {
      for (double f : {0.35, 0.3, 0.25, 0.1}) {
        end = bucket(b0, int64_t(80 * f * kMs * (1 + jitter(rng))), uint64_t(f * (1 << 30)));
        b0 = end + int64_t(wait_ms * kMs);
      }
      s.grad_end.push_back(end);
    }
    t += int64_t(period_ms * (1 + jitter(rng)) * kMs);
  }
  return s;
}

// Every activity ends where a step's gradient collective ends; returns how many
// there are.
size_t ExpectEndsOnGradients(const DpSeries &s, const std::vector<Activity> &acts) {
  size_t k = 0;
  for (const Activity &a : acts) {
    while (k < s.grad_end.size() && s.grad_end[k] < a.end_ns) ++k;
    EXPECT_LT(k, s.grad_end.size());
    if (k < s.grad_end.size()) EXPECT_EQ(a.end_ns, s.grad_end[k]);
  }
  return acts.size();
}

TEST(DpActivities, TwoPhaseDpEndsAtTheGradientPhase) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    for (double wait_ms : {0.0, 2.5, 20.0}) {
      DpSeries s = Steps(30, 1000, true, wait_ms, seed);
      const int64_t window_end = s.transfers.back().end_ns + 500 * kMs;
      auto acts = DpActivities(s.transfers, window_end, 0.25, {});
      EXPECT_GE(ExpectEndsOnGradients(s, acts), 28u) << seed << " " << wait_ms;
    }
  }
}

TEST(DpActivities, AllReduceUnchanged) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    for (double wait_ms : {0.01, 150.0}) {
      DpSeries s = Steps(30, 1500, false, wait_ms, seed);
      const int64_t window_end = s.transfers.back().end_ns + 500 * kMs;
      EXPECT_EQ(ExpectEndsOnGradients(s, DpActivities(s.transfers, window_end, 0.25, {})), 30u);
    }
  }
}

Activity At(int64_t start_ms, int64_t end_ms) { return {0, 0, start_ms * kMs, end_ms * kMs}; }

TEST(MergeAlternatingSteps, JoinsPiecesOfOnePeriod) {
  // Two pieces per 1 s step, 30 ms apart.
  std::vector<Activity> acts;
  for (int k = 0; k < 6; ++k) {
    acts.push_back(At(1000 * k, 1000 * k + 50));
    acts.push_back(At(1000 * k + 80, 1000 * k + 120));
  }
  auto merged = MergeAlternatingSteps(acts, 3.0);
  ASSERT_EQ(merged.size(), 6u);
  EXPECT_EQ(merged[2].start_ns, 2000 * kMs);
  EXPECT_EQ(merged[2].end_ns, 2120 * kMs);
}

TEST(MergeAlternatingSteps, OneStallChangesNothing) {
  std::vector<Activity> acts;
  for (int k = 0; k < 8; ++k)
    acts.push_back(At(1000 * k + (k >= 4 ? 40'000 : 0), 1000 * k + 50 + (k >= 4 ? 40'000 : 0)));
  EXPECT_EQ(MergeAlternatingSteps(acts, 3.0).size(), 8u);
}

}  // namespace
}  // namespace prism::analysis
