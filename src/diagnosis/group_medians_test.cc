#include "diagnosis/group_medians.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "diagnosis/robust_stats.h"

namespace prism::diagnosis {
namespace {

// Runs the two passes over `groups` and checks each median is the very double Median() gives.
void ExpectSameAsMedian(const std::vector<std::vector<double>>& groups) {
  GroupMedians gm(groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    for (double v : groups[g]) gm.Observe(g, v);
  gm.StartCollecting();
  for (size_t g = groups.size(); g-- > 0;)  // any order
    for (double v : groups[g]) gm.Collect(g, v);
  const std::vector<double> got = gm.Finish();
  ASSERT_EQ(got.size(), groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const double want = groups[g].empty() ? 0.0 : Median(groups[g]);
    EXPECT_EQ(std::bit_cast<uint64_t>(got[g]), std::bit_cast<uint64_t>(want))
        << "group " << g << " of " << groups[g].size() << ": " << got[g] << " vs " << want;
  }
}

// The same two passes with each group's values cut into `runs` runs as the threads cut the
// records: value i of group g goes to run (i + g) % runs, or all of group g to run g % runs when
// `whole_groups` (the group is then empty in every other run). The first run passes its values to
// the whole, each other run to a part of its own, the later runs first: the medians must be the
// very doubles Median() gives over all the values.
void ExpectSameAsMedianInRuns(const std::vector<std::vector<double>>& groups, size_t runs,
                              bool whole_groups) {
  const auto run_of = [&](size_t g, size_t i) { return whole_groups ? g % runs : (i + g) % runs; };
  GroupMedians gm(groups.size());
  std::vector<GroupMedians> parts;
  for (size_t t = 1; t < runs; ++t) parts.push_back(gm.Part());
  const auto pass = [&](auto visit) {
    for (size_t t = runs; t-- > 0;) {
      GroupMedians& m = t == 0 ? gm : parts[t - 1];
      for (size_t g = 0; g < groups.size(); ++g)
        for (size_t i = 0; i < groups[g].size(); ++i)
          if (run_of(g, i) == t) visit(m, g, groups[g][i]);
    }
  };
  pass([](GroupMedians& m, size_t g, double v) { m.Observe(g, v); });
  gm.StartCollecting(parts);
  pass([](GroupMedians& m, size_t g, double v) { m.Collect(g, v); });
  const std::vector<double> got = gm.Finish(parts);
  ASSERT_EQ(got.size(), groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const double want = groups[g].empty() ? 0.0 : Median(groups[g]);
    EXPECT_EQ(std::bit_cast<uint64_t>(got[g]), std::bit_cast<uint64_t>(want))
        << "group " << g << " of " << groups[g].size() << " in " << runs << " runs: " << got[g]
        << " vs " << want;
  }
}

TEST(GroupMedians, SmallGroupsOddEvenEmpty) {
  ExpectSameAsMedian({{}, {3.5}, {2, 1}, {5, 1, 3}, {4, 4, 4, 4}, {0.0, 1e300}, {0.0, 0.0, 7}});
}

TEST(GroupMedians, RandomGroupsMatchMedian) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> bw(1.0, 0.8);
  std::uniform_int_distribution<int> size(0, 5000);
  std::vector<std::vector<double>> groups(40);
  for (auto& g : groups) {
    const int n = size(rng);
    for (int i = 0; i < n; ++i) g.push_back(bw(rng));
    // Outliers far from the rest and exact duplicates.
    if (n > 10) {
      g[0] = 1e-12;
      g[1] = 1e12;
      g[2] = g[3];
    }
  }
  ExpectSameAsMedian(groups);
}

TEST(GroupMedians, ManyTiesAroundTheMiddle) {
  std::vector<double> g(10001, 2.0);
  for (size_t i = 0; i < g.size(); i += 3) g[i] = 2.0 + double(i % 7) * 1e-15;
  ExpectSameAsMedian({g, std::vector<double>(g.begin(), g.end() - 1)});
}

// Parts of runs of the values give the medians of all of them: odd and even counts, groups of
// one value, groups empty in some runs or in all, and groups whose lowest and highest values are
// seen by different runs (their bounds and histogram ranges come from the merge).
TEST(GroupMedians, PartsOfRunsGiveTheMediansOfAllValues) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> bw(1.0, 0.8);
  std::vector<std::vector<double>> groups = {{}, {3.5}, {2, 1}, {5, 1, 3}, {4, 4, 4, 4},
                                             {0.0, 1e300}, {0.0, 0.0, 7}};
  for (int n : {1, 2, 999, 1000, 4097, 20000}) {
    std::vector<double>& g = groups.emplace_back();
    for (int i = 0; i < n; ++i) g.push_back(bw(rng));
    if (n > 10) g[0] = 1e-12, g[n - 1] = 1e12;  // outliers in different runs
  }
  // A few rate levels, as simulated windows' records come: the middle range is most of the group.
  std::vector<double>& levels = groups.emplace_back();
  for (int i = 0; i < 30001; ++i) levels.push_back(i % 5 == 0 ? 1.25 : i % 5 == 1 ? 2.5 : 3.75);
  for (size_t runs : {1, 2, 3, 7})
    for (bool whole_groups : {false, true}) {
      SCOPED_TRACE(runs);
      SCOPED_TRACE(whole_groups);
      ExpectSameAsMedianInRuns(groups, runs, whole_groups);
    }
}

// Values spread over the whole range of doubles, or arriving in rising or falling order, widen a
// group's histogram many times and merge its buckets up to the widest: the medians stay exact,
// on one run and when runs saw ranges of different widths (their buckets then merge to the
// widest any run used, and further where the runs' ranges together are wider still).
TEST(GroupMedians, WideAndOrderedValuesGiveTheMediansOfAllValues) {
  std::vector<std::vector<double>> groups;
  std::vector<double>& full = groups.emplace_back();  // every power of two a double holds
  for (int e = -1074; e <= 1023; ++e) full.push_back(std::ldexp(1.0, e));
  full.push_back(0.0);
  full.push_back(std::numeric_limits<double>::max());
  std::vector<double>& rising = groups.emplace_back();
  for (int i = 0; i < 50000; ++i) rising.push_back(1.0 + i * 1e-4);
  std::vector<double>& falling = groups.emplace_back();
  for (int i = 0; i < 50000; ++i) falling.push_back(std::exp(20.0 - i * 1e-3));
  // Narrow in some runs, wide in others: the first half close together, the rest far apart.
  std::vector<double>& mixed = groups.emplace_back();
  for (int i = 0; i < 3001; ++i) mixed.push_back(i < 1500 ? 7.0 + i * 1e-9 : std::ldexp(1.0, i % 600 - 300));
  // Values that two runs see each close together but far from the other's (the group's index is
  // even, so value i goes to run i % 2 of two): each run's buckets are fine, their merge coarse.
  ASSERT_EQ(groups.size() % 2, 0u);
  std::vector<double>& apart = groups.emplace_back();
  for (int i = 0; i < 4001; ++i) apart.push_back((i % 2 == 0 ? 1.0 : 1e100) * (1 + i * 1e-12));
  ExpectSameAsMedian(groups);
  for (size_t runs : {2, 3, 5})
    for (bool whole_groups : {false, true}) {
      SCOPED_TRACE(runs);
      SCOPED_TRACE(whole_groups);
      ExpectSameAsMedianInRuns(groups, runs, whole_groups);
    }
}

// A run that collects a value it did not count in pass 1 would write past its slice of the one
// buffer: it is refused.
TEST(GroupMedians, ARunCollectingAValueItDidNotCountIsRefused) {
  GroupMedians gm(1);
  std::vector<GroupMedians> parts;
  parts.push_back(gm.Part());
  for (double v : {1.0, 2.0, 3.0}) gm.Observe(0, v);
  for (double v : {2.0, 2.0}) parts[0].Observe(0, v);
  gm.StartCollecting(parts);
  for (double v : {1.0, 2.0, 3.0}) gm.Collect(0, v);
  parts[0].Collect(0, 2.0);
  parts[0].Collect(0, 2.0);
  EXPECT_DEATH(parts[0].Collect(0, 2.0), "PRISM_CHECK failed: g.next != g.end");
  EXPECT_EQ(gm.Finish(parts), std::vector<double>{2.0});
}

}  // namespace
}  // namespace prism::diagnosis
