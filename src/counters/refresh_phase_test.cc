#include "counters/refresh_phase.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace prism::counters {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

// Polls every ~1 s (10% jitter) of a busy port refreshed every `refresh_ms` at `phase_ms`: a poll
// reads a new value exactly when a refresh fell since the previous poll.
void Polls(double refresh_ms, double phase_ms, size_t n, std::vector<int64_t>* ts,
           std::vector<bool>* nonzero, uint64_t seed = 3) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> jitter(0, 0.1);
  double t = 250;
  for (size_t i = 0; i < n; ++i) {
    ts->push_back(kT0 + static_cast<int64_t>(t));
    t += std::max(0.2, 1 + jitter(rng)) * 1000;
  }
  nonzero->push_back(true);
  for (size_t i = 1; i < n; ++i) {
    const double a = std::floor(((*ts)[i - 1] - kT0 - phase_ms) / refresh_ms);
    const double b = std::floor(((*ts)[i] - kT0 - phase_ms) / refresh_ms);
    nonzero->push_back(b > a);
  }
}

TEST(RefreshLattice, RecoveredFromWhichPollsReadANewValue) {
  std::vector<int64_t> ts;
  std::vector<bool> nz;
  Polls(1000, 370, 300, &ts, &nz);
  size_t zeros = 0;
  for (bool b : nz) zeros += b ? 0 : 1;
  ASSERT_GE(zeros, 3u);  // stale zeros: two polls within one refresh
  // The measured refresh (mean interval between non-zero polls) overstates it: search below.
  const RefreshLattice l = EstimateRefreshLattice(ts, nz, 1.05, ts.front(), ts.back());
  EXPECT_NEAR(l.refresh_ms, 1000, 0.5);
  EXPECT_DOUBLE_EQ(l.fit, 1.0);
  // Every poll is mapped to the refresh it read, within 25 ms over the 5 minutes (polls within
  // that much of a refresh may be given the one before: the lattice is known to a few ms).
  size_t checked = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const double since = std::fmod(static_cast<double>(ts[i] - kT0) - 370 + 1e6, 1000.0);
    if (since < 30 || since > 970) continue;
    const double truth = 370 + std::floor((ts[i] - kT0 - 370) / 1000.0) * 1000;
    EXPECT_NEAR(ReadInstantMs(l, ts[i]) - kT0, truth, 25) << i;
    ++checked;
  }
  EXPECT_GT(checked, 250u);
}

TEST(RefreshLattice, TooFewPollsGiveNone) {
  std::vector<int64_t> ts;
  std::vector<bool> nz;
  Polls(1000, 370, 10, &ts, &nz);
  const RefreshLattice l = EstimateRefreshLattice(ts, nz, 1.0, ts.front(), ts.back());
  EXPECT_EQ(l.refresh_ms, 0);
  EXPECT_DOUBLE_EQ(ReadInstantMs(l, ts[3]), static_cast<double>(ts[3]));
}

}  // namespace
}  // namespace prism::counters
