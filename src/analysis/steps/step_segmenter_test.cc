#include "analysis/steps/step_segmenter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace prism::analysis {
namespace {

constexpr int64_t kMs = 1'000'000;

struct Series {
  std::vector<int64_t> start, end;
  std::vector<int64_t> true_step_first_start;  // start of each step's first transfer
};

// `steps` steps of period `period_ms`; each step ends with `buckets` DP buckets (several
// channels starting together), bucket b lasting `bucket_ms`, separated by `idle_ms` of waiting
// (a ring waiting for its slowest edge).
Series DpBursts(int steps, double period_ms, int buckets, double bucket_ms, double idle_ms,
                uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> jitter(0, 0.01);
  Series s;
  int64_t t = 100 * kMs;
  for (int k = 0; k < steps; ++k) {
    s.true_step_first_start.push_back(t);
    int64_t b0 = t;
    for (int b = 0; b < buckets; ++b) {
      const int64_t dur = int64_t(bucket_ms * (1 + jitter(rng)) * kMs);
      for (int ch = 0; ch < 2; ++ch) {
        s.start.push_back(b0 + ch * 3'000);
        s.end.push_back(b0 + ch * 3'000 + dur);
      }
      b0 += dur + int64_t(idle_ms * kMs);
    }
    t += int64_t(period_ms * (1 + jitter(rng)) * kMs);
  }
  return s;
}

void ExpectSteps(const Series& s, const std::vector<Activity>& steps) {
  ASSERT_EQ(steps.size(), s.true_step_first_start.size());
  for (size_t k = 0; k < steps.size(); ++k) EXPECT_EQ(steps[k].start_ns, s.true_step_first_start[k]);
}

TEST(StepSegmenter, CutsRingBucketsIntoSteps) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Series s = DpBursts(30, 1500, 4, 20, 0.01, seed);
    ExpectSteps(s, SegmentSteps(s.start, s.end, {}));
  }
}

// A ring whose edges wait on a slow edge (150 ms idle between buckets, as congested rings do in
// the simulator): still one step.
TEST(StepSegmenter, LongWaitsInsideTheDpPhaseDoNotSplitSteps) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Series s = DpBursts(30, 1500, 4, 20, 150, seed);
    ExpectSteps(s, SegmentSteps(s.start, s.end, {}));
  }
}

// ZeRO-3 / FSDP: gradients reduce-scattered layer by layer through the backward, the optimizer,
// then the next step's parameters gathered layer by layer ahead of its forward. The DP traffic has
// idle gaps of every length, between gathers (0.3-6 ms), the optimizer (8-16 ms), a layer's
// backward (10-65 ms), the forward (120-170 ms), no class 3x apart from the next: the regular cut at the forward gap is still one
// activity per period (each from its first reduce-scatter to the gathers after it).
TEST(StepSegmenter, LayerWiseShardedDpIsOneActivityPerPeriod) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    Series s;
    int64_t t = 100 * kMs;
    auto transfer = [&](double dur_ms, double idle_ms) {  // four ring edges at once
      for (int edge = 0; edge < 4; ++edge) {
        s.start.push_back(t + edge * 50'000);
        s.end.push_back(t + edge * 50'000 + int64_t(dur_ms * kMs));
      }
      t = s.end.back() + int64_t(idle_ms * kMs);
    };
    for (int k = 0; k < 40; ++k) {
      s.true_step_first_start.push_back(t);
      for (int layer = 0; layer < 6; ++layer)  // backward, then the optimizer
        transfer(1 + u(rng), layer == 5 ? 8 + 8 * u(rng) : 10 + 55 * u(rng));
      for (int layer = 0; layer < 6; ++layer) transfer(1 + u(rng), 0.3 + 5.7 * u(rng));  // gathers
      t += int64_t((120 + 50 * u(rng)) * kMs);                                              // forward
    }
    ExpectSteps(s, SegmentSteps(s.start, s.end, {}));
  }
}

// A degraded link for 20 of 50 steps: steps stretch from 1.0 to 1.8 s and their idle gaps from
// 0.9 to 1.7 s. The gaps of the slow spell alone would cut it into regular steps, but leave the
// busy rest of the series uncut: every step is cut, slow or not.
TEST(StepSegmenter, ASlowSpellDoesNotHideTheStepsAroundIt) {
  Series s;
  int64_t t = 100 * kMs;
  for (int k = 0; k < 50; ++k) {
    const bool slow = k >= 20 && k < 40;
    s.true_step_first_start.push_back(t);
    int64_t b = t;
    for (int burst = 0; burst < 3; ++burst) {  // three buckets 30 ms apart
      for (int ch = 0; ch < 2; ++ch) {
        s.start.push_back(b + ch * 3'000);
        s.end.push_back(b + ch * 3'000 + 20 * kMs);
      }
      b += 50 * kMs;
    }
    t += (slow ? 1800 : 1000) * kMs;
  }
  ExpectSteps(s, SegmentSteps(s.start, s.end, {}));
}

// Step gaps (70 ms) less than 3x the gaps inside a step (40 ms), and the burst detector ran over
// a quarter of the step gaps (their bursts span two steps): judged at the gaps between bursts
// alone no cut is regular and every burst gap becomes a step gap; judged as the final pass cuts,
// at every transfer's idle time, the step gap is regular.
TEST(StepGapThreshold, AStepGapInsideABurstStillCountsForDpGroups) {
  std::vector<int64_t> start, end;
  std::vector<Activity> bursts;
  int64_t t = 0;
  for (int k = 0; k < 20; ++k) {
    for (int c = 0; c < 4; ++c) {
      const size_t i = start.size();
      start.push_back(t + c * 50 * kMs);
      end.push_back(t + c * 50 * kMs + 10 * kMs);
      const bool joined = k % 4 == 3 && c == 0;  // this step's first burst began in the last step
      if (joined) {
        bursts.back().last = i;
        bursts.back().end_ns = end.back();
      } else {
        bursts.push_back({i, i, start.back(), end.back()});
      }
    }
    t += 230 * kMs;  // 4 chunks of 10 ms, 40 ms apart, then a 70 ms step gap
  }
  const int64_t as_dp_group = StepGapThreshold(bursts, start, end, DpGroupSegmenterOptions());
  EXPECT_GT(as_dp_group, 40 * kMs);
  EXPECT_LT(as_dp_group, 70 * kMs);
  EXPECT_LT(StepGapThreshold(bursts, start, end, {}), 40 * kMs);
}

std::vector<Activity> SingleTransfers(const std::vector<int64_t>& start,
                                      const std::vector<int64_t>& end) {
  std::vector<Activity> out;
  for (size_t i = 0; i < start.size(); ++i) out.push_back({i, i, start[i], end[i]});
  return out;
}

bool SameSteps(const std::vector<Activity>& a, const std::vector<Activity>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].first != b[k].first || a[k].last != b[k].last || a[k].end_ns != b[k].end_ns) return false;
  return true;
}

// Steps whose gaps alone cut them regularly (a ring's buckets 10 us apart, 1.5 s steps): a pair's
// own segments take that cut without looking for bursts, and it is the cut the bursts give too.
TEST(StepSegmenter, GapsThatSettleTheStepsNeedNoBursts) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Series s = DpBursts(30, 1500, 4, 20, 0.01, seed);
    const StepSegmenterOptions pair = PairSegmenterOptions();
    EXPECT_TRUE(FindStepGapCut(SingleTransfers(s.start, s.end), s.start, s.end, pair).regular);
    std::vector<Activity> bursts{{0, 0, 0, 0}};
    uint64_t points = 0;
    const auto steps = SegmentSteps(s.start, s.end, pair, &bursts, &points);
    EXPECT_TRUE(bursts.empty());  // BOCD did not run
    EXPECT_EQ(points, 0u);
    ExpectSteps(s, steps);
    std::vector<Activity> with_bursts;
    EXPECT_TRUE(SameSteps(steps, SegmentSteps(s.start, s.end, {}, &with_bursts, &points)));
    EXPECT_FALSE(with_bursts.empty());
    // About every interval: some after a cut are fed again, a cut placed ahead skips a few.
    EXPECT_GT(points, s.start.size() / 2);
  }
}

// Idle gaps spread evenly over six decades (no regular cut among them): the bursts are looked
// for, and the steps are exactly those of the segmenter that always looks.
TEST(StepSegmenter, IrregularGapsStillLookForBursts) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> log_gap(std::log(1e3), std::log(1e9));
    std::vector<int64_t> start, end;
    int64_t t = 0;
    for (int i = 0; i < 300; ++i) {
      start.push_back(t);
      end.push_back(t + 1'000);
      t += 1'000 + int64_t(std::exp(log_gap(rng)));
    }
    const StepSegmenterOptions pair = PairSegmenterOptions();
    EXPECT_FALSE(FindStepGapCut(SingleTransfers(start, end), start, end, pair).regular);
    std::vector<Activity> bursts;
    uint64_t points = 0;
    const auto steps = SegmentSteps(start, end, pair, &bursts, &points);
    EXPECT_FALSE(bursts.empty());
    EXPECT_GT(points, start.size() / 2);
    EXPECT_TRUE(SameSteps(steps, SegmentSteps(start, end, {})));
  }
}

TEST(StepSegmenter, OneTransferPerStep) {
  Series s = DpBursts(40, 1000, 1, 50, 0, 3);
  ExpectSteps(s, SegmentSteps(s.start, s.end, {}));
}

TEST(StepSegmenter, EmptyAndSingle) {
  EXPECT_TRUE(SegmentSteps({}, {}, {}).empty());
  std::vector<int64_t> a{5}, b{9};
  auto one = SegmentSteps(a, b, {});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].end_ns, 9);
}

}  // namespace
}  // namespace prism::analysis
