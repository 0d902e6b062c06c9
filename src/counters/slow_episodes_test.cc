#include "counters/slow_episodes.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace prism::counters {
namespace {

using diagnosis::Severity;

// `n` iterations of `step_s` with uniform measurement noise of +-noise_s (boundary blur).
std::vector<IterationSample> Steps(size_t n, double step_s, double noise_s, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-noise_s, noise_s);
  std::vector<IterationSample> v(n);
  for (IterationSample& s : v) s.duration_s = step_s + u(rng);
  return v;
}

ResolutionLimit OneSecondPolls(double median_s) {
  return ComputeResolution(/*refresh_s=*/1.0, /*poll_p90_s=*/1.1, median_s, 0.02 * median_s, 3);
}

TEST(Resolution, TwoBoundariesOfBlurSigmaAndFifteenPercent) {
  ResolutionLimit r = ComputeResolution(1.05, 0.84, 3.7, 0.1, 3);
  EXPECT_DOUBLE_EQ(r.boundary_s, 1.05);
  EXPECT_DOUBLE_EQ(r.limit_s, 2.1);
  EXPECT_NEAR(r.uncertainty_s, 1.05 / std::sqrt(6.0), 1e-9);
  // Noisy steps: k sigma decides.
  EXPECT_DOUBLE_EQ(ComputeResolution(1, 0.5, 3.7, 0.9, 3).limit_s, 2.7);
  // Long steps: 15% of the median.
  EXPECT_DOUBLE_EQ(ComputeResolution(1, 0.5, 40, 0.1, 3).limit_s, 6);
}

TEST(SlowEpisodes, ExcessBelowTheLimitStaysInTheSeries) {
  auto it = Steps(200, 2.5, 0.4);
  it[50].duration_s = 2.5 + 1.6;  // elevated, but less than two boundaries' blur
  EpisodeAnalysis a = FindSlowEpisodes(it, 2.5, OneSecondPolls(2.5), {});
  EXPECT_TRUE(a.episodes.empty());
  EXPECT_FALSE(a.rhythm);
  EXPECT_EQ(a.state[50], IterationState::kNormal);
  EXPECT_NEAR(a.excess_s[50], 1.6 + (it[50].duration_s - 4.1), 1e-9);
}

TEST(SlowEpisodes, LateBoundaryLongThenShortCancels) {
  auto it = Steps(200, 2.5, 0.2);
  it[80].duration_s = 2.5 + 2.6;  // the boundary after 80 placed 2.6 s late ...
  it[81].duration_s = 2.5 - 2.4;  // ... so 81 is short by as much
  EXPECT_TRUE(FindSlowEpisodes(it, 2.5, OneSecondPolls(2.5), {}).episodes.empty());
  it[81].duration_s = 2.5;  // a real slow iteration: its neighbours are normal
  EpisodeAnalysis a = FindSlowEpisodes(it, 2.5, OneSecondPolls(2.5), {});
  ASSERT_EQ(a.episodes.size(), 1u);
  EXPECT_EQ(a.episodes[0].first, 80u);
  EXPECT_EQ(a.episodes[0].slow, 1);
}

TEST(SlowEpisodes, MissedBoundaryIsTwoIterationsNotOneSlow) {
  auto it = Steps(200, 3.7, 0.2);
  it[30].duration_s = 7.3;  // two iterations' bytes in two steps' time
  it[30].work = 2.05;
  it[90].duration_s = 7.3;  // one iteration's bytes: it is slow
  it[90].work = 1.02;
  EpisodeAnalysis a = FindSlowEpisodes(it, 3.7, OneSecondPolls(3.7), {});
  EXPECT_EQ(a.state[30], IterationState::kMerged);
  EXPECT_EQ(a.merged, 2u);
  ASSERT_EQ(a.episodes.size(), 1u);
  EXPECT_EQ(a.episodes[0].first, 90u);
}

TEST(SlowEpisodes, SustainedSlowdownAddsUpToOneEpisode) {
  // A slow server: 17 iterations each 1.7 s longer than 5.25 s, less than the 2.2 s a single
  // iteration can show at 1 s polls, 29 s over the run.
  auto it = Steps(110, 5.25, 0.3);
  for (size_t i = 60; i < 77; ++i) it[i].duration_s += 1.7;
  EpisodeAnalysis a = FindSlowEpisodes(it, 5.25, OneSecondPolls(5.25), {});
  ASSERT_EQ(a.episodes.size(), 1u);
  EXPECT_EQ(a.episodes[0].first, 60u);
  EXPECT_EQ(a.episodes[0].last, 76u);
  EXPECT_EQ(a.episodes[0].slow, 17);
  EXPECT_NEAR(a.episodes[0].extra_s, 17 * 1.7, 2.5);
}

// With jittery polls (p90 1.4 s) one iteration must be 1.7 s over to stand out; a slow server's
// 1.3 s per iteration, twenty times, is still one episode.
TEST(SlowEpisodes, SustainedSlowdownBelowKUncertaintiesStillAddsUp) {
  auto it = Steps(110, 4.45, 0.3, 7);
  for (size_t i = 60; i < 80; ++i) it[i].duration_s += 1.3;
  const ResolutionLimit lim = ComputeResolution(1.0, 1.38, 4.45, 0.09, 3);
  ASSERT_GT(3 * lim.uncertainty_s, 1.3 + 0.3);
  EpisodeAnalysis a = FindSlowEpisodes(it, 4.45, lim, {});
  ASSERT_EQ(a.episodes.size(), 1u);
  EXPECT_EQ(a.episodes[0].first, 60u);
  EXPECT_EQ(a.episodes[0].last, 79u);
  EXPECT_NEAR(a.episodes[0].extra_s, 26, 3);
  // Two such iterations in a row (3.2 s together, over the 2.76 s limit) are not a run the
  // counters can tell from noise.
  auto two = Steps(110, 4.45, 0.3, 7);
  two[60].duration_s = two[61].duration_s = 4.45 + 1.6;
  EXPECT_TRUE(FindSlowEpisodes(two, 4.45, lim, {}).episodes.empty());
  two[62].duration_s = 4.45 + 1.6;  // three are
  EXPECT_EQ(FindSlowEpisodes(two, 4.45, lim, {}).episodes.size(), 1u);
}

TEST(SlowEpisodes, NearbySlowIterationsJoinDistantOnesDoNot) {
  auto it = Steps(200, 3.0, 0.1);
  it[40].duration_s = it[43].duration_s = 7;  // two normal ones between: one episode
  it[120].duration_s = 7;                     // far away: another
  EpisodeAnalysis a = FindSlowEpisodes(it, 3.0, OneSecondPolls(3.0), {});
  ASSERT_EQ(a.episodes.size(), 2u);
  EXPECT_EQ(a.episodes[0].first, 40u);
  EXPECT_EQ(a.episodes[0].last, 43u);
  EXPECT_EQ(a.episodes[0].slow, 2);
  EXPECT_EQ(a.episodes[1].first, 120u);
}

TEST(SlowEpisodes, CheckpointCadenceIsTheRhythmAndAStallStillStandsOut) {
  auto it = Steps(400, 3.0, 0.2);
  for (size_t i = 15; i < 400; i += 25) it[i].duration_s += 6;  // a checkpoint every 25 steps
  it[200].duration_s = 7.4;  // a missed boundary does not shift the cadence
  it[200].work = 2.0;
  it[253].duration_s += 30;  // a stall
  EpisodeAnalysis a = FindSlowEpisodes(it, 3.0, OneSecondPolls(3.0), {});
  ASSERT_TRUE(a.rhythm);
  EXPECT_EQ(a.rhythm->every, 25);
  EXPECT_EQ(a.rhythm->count, 16);
  EXPECT_NEAR(a.rhythm->extra_s, 6, 0.5);
  EXPECT_NEAR(a.rhythm->period_s, 75, 1e-9);
  EXPECT_EQ(a.state[265], IterationState::kRhythm);
  ASSERT_EQ(a.episodes.size(), 1u);
  EXPECT_EQ(a.episodes[0].first, 253u);
}

TEST(SlowEpisodes, ScatteredSlowIterationsAreNoRhythm) {
  auto it = Steps(300, 3.0, 0.1);
  for (size_t i : {7, 11, 18, 23, 31, 34, 45, 52, 58, 61, 70, 77, 89, 93, 104, 109, 117, 126})
    it[i].duration_s = 7;
  EpisodeAnalysis a = FindSlowEpisodes(it, 3.0, OneSecondPolls(3.0), {});
  EXPECT_FALSE(a.rhythm);
  EXPECT_FALSE(a.episodes.empty());
}

TEST(SlowEpisodes, GapsAreNeitherNormalNorSlow) {
  auto it = Steps(100, 3.0, 0.1);
  it[20].duration_s = 60;
  it[20].gap = true;
  EpisodeAnalysis a = FindSlowEpisodes(it, 3.0, OneSecondPolls(3.0), {});
  EXPECT_TRUE(a.episodes.empty());
  EXPECT_EQ(a.state[20], IterationState::kGap);
}

TEST(Impact, LostGpuTimeDecidesSeverity) {
  ImpactOptions o;
  EXPECT_EQ(SeverityOfLoss(30 * 8 * 15.0, o), Severity::kCritical);  // 30 servers stalled 15 s
  EXPECT_EQ(SeverityOfLoss(2 * 8 * 5.0, o), Severity::kInfo);        // 2 servers, one slow step
  EXPECT_EQ(SeverityOfLoss(8 * 8 * 29.7, o), Severity::kWarning);    // 8 servers, 30 s
}

}  // namespace
}  // namespace prism::counters
