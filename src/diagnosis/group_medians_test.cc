#include "diagnosis/group_medians.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "diagnosis/robust_stats.h"

namespace prism::diagnosis {
namespace {

// Runs the three passes over `groups` and checks each median is the very double Median() gives.
void ExpectSameAsMedian(const std::vector<std::vector<double>>& groups) {
  GroupMedians gm(groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    for (double v : groups[g]) gm.Observe(g, v);
  gm.StartCounting();
  for (size_t g = groups.size(); g-- > 0;)  // any order
    for (double v : groups[g]) gm.Count(g, v);
  gm.StartCollecting();
  for (size_t g = 0; g < groups.size(); ++g)
    for (double v : groups[g]) gm.Collect(g, v);
  const std::vector<double> got = gm.Finish();
  ASSERT_EQ(got.size(), groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const double want = groups[g].empty() ? 0.0 : Median(groups[g]);
    EXPECT_EQ(std::bit_cast<uint64_t>(got[g]), std::bit_cast<uint64_t>(want))
        << "group " << g << " of " << groups[g].size() << ": " << got[g] << " vs " << want;
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

}  // namespace
}  // namespace prism::diagnosis
