#include "counters/counters_analysis.h"

#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "counters/counters_test_util.h"
#include "counters/period.h"

namespace prism::counters {
namespace {

constexpr double kBin = 0.25;

// A pulse train: `width_s` bursts of height 1 every `period_s`, plus a second burst of height
// `second` half a period later.
std::vector<double> Pulses(double period_s, double width_s, double second, double total_s) {
  std::vector<double> x(static_cast<size_t>(total_s / kBin));
  for (size_t i = 0; i < x.size(); ++i) {
    double ph = std::fmod(i * kBin, period_s);
    if (ph < width_s) x[i] = 1;
    else if (ph >= period_s / 2 && ph < period_s / 2 + width_s) x[i] = second;
  }
  return x;
}

TEST(Period, FindsThePeriodOfAPulseTrain) {
  auto x = Pulses(11.4, 2, 0, 1200);
  std::vector<uint8_t> ok(x.size(), 1);
  PeriodEstimate e = EstimatePeriod(x, ok, kBin, {});
  EXPECT_NEAR(e.period_s, 11.4, 0.11);
  EXPECT_GT(e.strength, 0.5);
}

// The harmonic trap: a 22.8 s iteration with a small second burst correlates at 11.4 s too.
TEST(Period, HarmonicTrapTakesTheFullIteration) {
  auto x = Pulses(22.8, 2, 0.15, 1200);
  std::vector<uint8_t> ok(x.size(), 1);
  EXPECT_NEAR(EstimatePeriod(x, ok, kBin, {}).period_s, 22.8, 0.23);
  // Equal halves: the fundamental is 11.4 s.
  auto y = Pulses(22.8, 2, 1.0, 1200);
  EXPECT_NEAR(EstimatePeriod(y, ok, kBin, {}).period_s, 11.4, 0.12);
}

// Aliasing: every 4th iteration stronger (as a 1 s refresh against a 5.25 s step does) makes the
// ACF peak at 4P; the fundamental is still P.
TEST(Period, MultipleFavouredByAliasingStillGivesTheStep) {
  std::vector<double> x(static_cast<size_t>(1200 / kBin));
  for (size_t i = 0; i < x.size(); ++i) {
    double t = i * kBin;
    int k = static_cast<int>(t / 5.25);
    if (std::fmod(t, 5.25) < 2) x[i] = k % 4 == 0 ? 1.6 : 1;
  }
  std::vector<uint8_t> ok(x.size(), 1);
  EXPECT_NEAR(EstimatePeriod(x, ok, kBin, {}).period_s, 5.25, 0.08);  // 1.5%: the job-level period comes from iterations
}

TEST(Period, NoiseIsNotPeriodic) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> n(0, 1);
  std::vector<double> x(4000);
  for (double& v : x) v = n(rng);
  std::vector<uint8_t> ok(x.size(), 1);
  EXPECT_EQ(EstimatePeriod(x, ok, kBin, {}).period_s, 0);
}

TEST(Period, Harmonics) {
  EXPECT_TRUE(HarmonicallyRelated(11.4, 22.8));
  EXPECT_TRUE(HarmonicallyRelated(11.4, 11.5));
  EXPECT_FALSE(HarmonicallyRelated(11.4, 16));
}

TEST(AnalyzeCounters, JobsPeriodsStallAndOutOfStep) {
  PortTopology topo;
  CountersData data = MakeTwoJobCluster(&topo);
  Stats stats;
  CountersResult r = AnalyzeCounters(data, topo, {}, &stats);
  ASSERT_EQ(r.jobs.size(), 2u);
  auto names = [&](const CountersJob& j) {
    std::vector<std::string> n;
    for (int s : j.servers) n.push_back(r.servers[s].name);
    return n;
  };
  EXPECT_EQ(names(r.jobs[0]), (std::vector<std::string>{"a0", "a1", "a2", "a3"}));
  EXPECT_EQ(names(r.jobs[1]), (std::vector<std::string>{"b0", "b1", "b2", "b3", "b4"}));
  EXPECT_NEAR(r.jobs[0].period_s, 6.0, 0.06);
  EXPECT_NEAR(r.jobs[1].period_s, 9.0, 0.09);
  EXPECT_GT(r.jobs[0].iterations.size(), 130u);
  bool stall = false, out_of_step = false;
  const int64_t t0 = 1'700'000'000'000;
  for (const CountersFinding& f : r.findings) {
    if (f.kind == diagnosis::FindingKind::kJobStall && f.job == 0 && f.start_ms - t0 < 305'000 &&
        f.end_ms - t0 > 325'000)
      stall = true;
    if (f.kind == diagnosis::FindingKind::kServerOutOfStep && f.job == 1 && f.servers.size() == 1 &&
        r.servers[f.servers[0]].name == "b2" && f.start_ms - t0 < 600'000 &&
        f.end_ms - t0 > 550'000)
      out_of_step = true;
  }
  EXPECT_TRUE(stall);
  EXPECT_TRUE(out_of_step);
  for (const CountersFinding& f : r.findings) {
    // 4 servers x 8 GPUs x ~30 s: 960 GPU-s, a warning by lost GPU time.
    if (f.kind == diagnosis::FindingKind::kJobStall) {
      EXPECT_EQ(f.severity, diagnosis::Severity::kWarning) << f.summary;
      EXPECT_NEAR(f.lost_gpu_s, 4 * 8 * 30, 4 * 8 * 4) << f.summary;
    }
    // b2's shift costs its job nothing: named, but info.
    if (f.kind == diagnosis::FindingKind::kServerOutOfStep) {
      EXPECT_EQ(f.severity, diagnosis::Severity::kInfo);
      EXPECT_NEAR(std::abs(f.value), 3.0, 0.6) << f.summary;
    }
  }
  EXPECT_GT(r.jobs[0].resolution.limit_s, 1.9);  // two boundaries of a 1 s refresh
  EXPECT_LT(r.jobs[0].resolution.limit_s, 2.5);
  // No false alarms elsewhere: every finding is one of the two injected ones.
  for (const CountersFinding& f : r.findings) {
    EXPECT_TRUE(f.kind == diagnosis::FindingKind::kJobStall ||
                f.kind == diagnosis::FindingKind::kServerOutOfStep ||
                (f.start_ms - t0 > 290'000 && f.end_ms - t0 < 340'000))
        << diagnosis::FindingKindName(f.kind) << " " << f.summary;
  }
}

// The out-of-step rule needs evidence that polling artefacts cannot make: a server at a constant
// phase of its own (a pipeline stage) is in step; a shift seen on one of its NICs only is not
// the server's.
TEST(AnalyzeCounters, OutOfStepNeedsAPhaseChangeOnEveryNic) {
  auto out_of_step = [](const CountersResult& r) {
    std::vector<std::string> names;
    for (const CountersFinding& f : r.findings)
      if (f.kind == diagnosis::FindingKind::kServerOutOfStep) {
        names.push_back(r.servers[f.servers[0]].name);
      }
    return names;
  };
  {
    PortTopology topo;
    CountersData data = MakeTwoJobCluster(&topo, /*shift_one_nic=*/false, /*role_offset_s=*/2.0);
    Stats stats;
    CountersResult r = AnalyzeCounters(data, topo, {}, &stats);
    ASSERT_EQ(r.jobs.size(), 2u);
    EXPECT_EQ(out_of_step(r), std::vector<std::string>{"b2"});
  }
  {
    PortTopology topo;
    CountersData data = MakeTwoJobCluster(&topo, /*shift_one_nic=*/true);
    Stats stats;
    CountersResult r = AnalyzeCounters(data, topo, {}, &stats);
    ASSERT_EQ(r.jobs.size(), 2u);
    EXPECT_TRUE(out_of_step(r).empty());
  }
}

}  // namespace
}  // namespace prism::counters
