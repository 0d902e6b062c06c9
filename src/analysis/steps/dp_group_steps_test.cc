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
    if (k < s.grad_end.size()) {
      EXPECT_EQ(a.end_ns, s.grad_end[k]);
    }
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

// Each transfer as `pieces` records of equal bytes: what an exporter that writes one record per
// packet (or per short flowlet) makes of it. The pieces keep the transfer's start and end, with
// idle gaps of up to 20% of a piece between them, as packets of a TCP stream come.
std::vector<DpTransfer> Fine(const std::vector<DpTransfer>& transfers, int pieces, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> busy(0.8, 1.0);
  std::vector<DpTransfer> out;
  for (const DpTransfer& t : transfers) {
    const int64_t len = (t.end_ns - t.start_ns) / pieces;
    for (int i = 0; i < pieces; ++i) {
      const int64_t start = t.start_ns + i * len;
      const int64_t end = i + 1 == pieces ? t.end_ns : start + int64_t(busy(rng) * double(len));
      out.push_back({start, end, t.bytes / pieces, t.sender});
    }
  }
  return out;
}

// The same steps from the same traffic cut into per-packet records: the optimizer's idle gap is
// the same on the wire, however many records the burst detector sees around it.
TEST(DpActivities, TwoPhaseDpWhateverTheRecordGranularity) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    for (double wait_ms : {0.0, 2.5, 20.0}) {
      DpSeries s = Steps(30, 1000, true, wait_ms, seed);
      const int64_t window_end = s.transfers.back().end_ns + 500 * kMs;
      const auto coarse = DpActivities(s.transfers, window_end, 0.25, DpGroupSegmenterOptions());
      const auto fine = DpActivities(Fine(s.transfers, 8, seed), window_end, 0.25,
                                     DpGroupSegmenterOptions());
      ASSERT_EQ(fine.size(), coarse.size()) << seed << " " << wait_ms;
      for (size_t k = 0; k < fine.size(); ++k)
        EXPECT_EQ(fine[k].end_ns, coarse[k].end_ns) << seed << " " << wait_ms << " step " << k;
      EXPECT_GE(ExpectEndsOnGradients(s, fine), 28u) << seed << " " << wait_ms;
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

// A ring all-reduce on a loaded host (the real-traffic corpus's `dp8`, 1.85-s steps): 14 chunks
// of 64 KB-records, each chunk 2-7 ms after the previous (the rank woken late), and between the
// reduce-scatter half and the all-gather half an idle time of 0.2-13 ms. Its bytes split in equal
// halves at an idle gap the burst detector cuts, but that gap is no optimizer: the step ends where
// the all-gather ends.
DpSeries LoadedRingAllReduce(int steps, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> chunk_gap(2, 7), half_gap(0.2, 13), compute(1750, 1790);
  DpSeries s;
  int64_t t = 100 * kMs;
  for (int k = 0; k < steps; ++k) {
    t += int64_t(compute(rng) * kMs);
    for (int chunk = 0; chunk < 14; ++chunk) {
      if (chunk == 7) t += int64_t(half_gap(rng) * kMs);
      for (int rec = 0; rec < 8; ++rec) {
        s.transfers.push_back({t, t + 300'000, 1 << 20});
        t += 310'000;
      }
      if (chunk != 6 && chunk != 13) t += int64_t(chunk_gap(rng) * kMs);
    }
    s.grad_end.push_back(t - 10'000);
  }
  return s;
}

// The activities of a whole series (the window ending 0.5 s after its last transfer), each
// expected to end on a gradient collective; returns how many there are.
size_t StepsEndingOnGradients(const DpSeries& s) {
  const int64_t window_end = s.transfers.back().end_ns + 500 * kMs;
  return ExpectEndsOnGradients(
      s, DpActivities(s.transfers, window_end, 0.25, DpGroupSegmenterOptions()));
}

TEST(DpActivities, RingAllReduceIdlingBetweenItsHalvesIsOnePhase) {
  for (uint64_t seed = 1; seed <= 10; ++seed)
    EXPECT_GE(StepsEndingOnGradients(LoadedRingAllReduce(30, seed)), 29u) << seed;
}

// DDP (the corpus's `ddp`): four equal gradient buckets all-reduced as the backward produces them,
// each 260-300 ms after the previous, in ~1.9-s steps. The bytes split in equal halves at a wait
// for the backward as long as the others: a wait inside one phase, not an optimizer between two.
DpSeries DdpBuckets(int steps, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> wait(260, 300), compute(900, 940);
  DpSeries s;
  int64_t t = 100 * kMs;
  for (int k = 0; k < steps; ++k) {
    t += int64_t(compute(rng) * kMs);
    for (int bucket = 0; bucket < 4; ++bucket) {
      if (bucket > 0) t += int64_t(wait(rng) * kMs);
      for (int rec = 0; rec < 16; ++rec) {
        s.transfers.push_back({t, t + 1'000'000, 1 << 20});
        t += 1'100'000;
      }
    }
    s.grad_end.push_back(t - 100'000);
  }
  return s;
}

TEST(DpActivities, DdpBucketsWaitingForTheBackwardAreOnePhase) {
  for (uint64_t seed = 1; seed <= 10; ++seed)
    EXPECT_GE(StepsEndingOnGradients(DdpBuckets(30, seed)), 29u) << seed;
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

// Four GPUs all-reduce once per 350 ms step; during steps [10, 20) GPU 3 computes 150 ms longer
// and the others, having started, wait for it. The wait splits each of those steps' collective in
// two activities; joined back, there is one per step.
std::vector<DpTransfer> LateMemberSteps(int steps, bool member_lost_in_step_25) {
  std::vector<DpTransfer> out;
  int64_t t = 100 * kMs;
  for (int k = 0; k < steps; ++k) {
    const bool late = k >= 10 && k < 20;
    const int64_t late_start = t + (late ? 150 * kMs : 0);
    for (uint32_t g = 0; g < 4; ++g) {
      if (member_lost_in_step_25 && k == 25 && g == 3) continue;
      const int64_t start = g >= 2 ? late_start : t;  // GPU 3 and its pairwise partner 2
      out.push_back({start, start + 2 * kMs, 1 << 20, g});
      out.push_back({late_start + 3 * kMs, late_start + 5 * kMs, 1 << 20, g});
    }
    t += (late ? 500 : 350) * kMs;
  }
  return out;
}

// Activities of sorted transfers, a new one after every idle gap over `gap_ns`.
std::vector<Activity> CutAtIdleGaps(const std::vector<DpTransfer>& sorted, int64_t gap_ns) {
  std::vector<Activity> acts;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (acts.empty() || sorted[i].start_ns - acts.back().end_ns > gap_ns)
      acts.push_back({i, i, sorted[i].start_ns, sorted[i].end_ns});
    acts.back().last = i;
    acts.back().end_ns = std::max(acts.back().end_ns, sorted[i].end_ns);
  }
  return acts;
}

// Ten steps of 2 s: 1.2 s of compute, then an 0.8-s all-reduce. The first collective lasts
// `first_ms` and ends at `first_end_ms` (800: where a step's collective ends).
std::vector<DpTransfer> StepsWithFirstCollectiveEndingAt(int64_t first_end_ms,
                                                         int64_t first_ms = 200) {
  std::vector<DpTransfer> transfers;
  for (int k = 0; k < 10; ++k) {
    const int64_t end = k == 0 ? first_end_ms * kMs : (k * 2000 + 800) * kMs;
    const int64_t start = k == 0 ? end - first_ms * kMs : end - 800 * kMs;
    for (int64_t t = start; t < end; t += 10 * kMs)
      transfers.push_back({t, std::min(end, t + 10 * kMs), 1 << 20});
  }
  return transfers;
}

TEST(DpActivities, FirstStepStartsWhereItsCollectiveEnds) {
  const auto acts = DpActivities(StepsWithFirstCollectiveEndingAt(800), INT64_MAX, 0, {});
  ASSERT_EQ(acts.size(), 10u);
  EXPECT_EQ(acts[0].end_ns, 800 * kMs);
}

// A first collective a quarter as long as the others that ends 250 ms later in its step (0.95 s
// before the next DP phase where the others end 1.2 s before theirs): the first step starts as
// the others do, the median lead before its DP phase. As long as the others, it is a DP phase and
// the step is short.
TEST(DpActivities, FirstCollectiveEndingLateIsAnchoredLikeTheOthers) {
  const auto acts = DpActivities(StepsWithFirstCollectiveEndingAt(1050), INT64_MAX, 0, {});
  ASSERT_EQ(acts.size(), 10u);
  EXPECT_NEAR(double(acts[0].end_ns), double(800 * kMs), double(2 * kMs));
  EXPECT_EQ(acts[1].end_ns - acts[0].end_ns, acts[2].end_ns - acts[1].end_ns);
  const auto whole = DpActivities(StepsWithFirstCollectiveEndingAt(1050, 800), INT64_MAX, 0, {});
  ASSERT_EQ(whole.size(), 10u);
  EXPECT_EQ(whole[0].end_ns, 1050 * kMs);
}

// A first step slower than the others (its collective ends 300 ms earlier): kept as observed.
TEST(DpActivities, SlowFirstStepIsKept) {
  const auto acts = DpActivities(StepsWithFirstCollectiveEndingAt(500), INT64_MAX, 0, {});
  ASSERT_EQ(acts.size(), 10u);
  EXPECT_EQ(acts[0].end_ns, 500 * kMs);
}

TEST(JoinCollectiveFragments, CollectiveThatWaitedForALateMemberIsOneStep) {
  const auto transfers = LateMemberSteps(30, false);
  StepSegmenterOptions options;
  const auto acts = DpActivities(transfers, INT64_MAX, 0, options);
  EXPECT_EQ(acts.size(), 30u);
  for (const Activity& a : acts) EXPECT_LT(a.end_ns - a.start_ns, 160 * kMs);
}

TEST(JoinCollectiveFragments, MemberMissingFromAWholeStepIsNotJoined) {
  std::vector<DpTransfer> transfers = LateMemberSteps(30, true);
  std::sort(transfers.begin(), transfers.end());
  // One activity per step, as the segmenter cuts them; step 25 lacks GPU 3's sends.
  const std::vector<Activity> acts = CutAtIdleGaps(transfers, 100 * kMs);
  // Steps 10-19 come out in two activities each (the wait); step 25's is merely incomplete.
  ASSERT_EQ(acts.size(), 40u);
  const auto joined = JoinCollectiveFragments(acts, transfers);
  EXPECT_EQ(joined.size(), 30u);
}

TEST(JoinCollectiveFragments, UnknownSendersLeaveActivitiesAlone) {
  std::vector<DpTransfer> transfers = LateMemberSteps(30, false);
  for (DpTransfer& t : transfers) t.sender = kUnknownSender;
  std::sort(transfers.begin(), transfers.end());
  const std::vector<Activity> acts = CutAtIdleGaps(transfers, 100 * kMs);
  EXPECT_EQ(JoinCollectiveFragments(acts, transfers).size(), acts.size());
}

}  // namespace
}  // namespace prism::analysis
