#include "service/shard_assignment.h"

#include <gtest/gtest.h>

#include "service/pair_graph.h"
#include "service/pair_jobs.h"
#include "service/stable_ids.h"

namespace prism::service {
namespace {

constexpr int64_t kS = 1'000'000'000;

std::vector<IpAddr> Gpus(int first, int n) {
  std::vector<IpAddr> out;
  for (int i = 0; i < n; ++i) out.push_back(IpAddr::FromV4(0x0A000000u + first + i));
  return out;
}

TEST(AssignShards, NewJobsGoToTheLeastLoadedShardLargestFirst) {
  const auto m = AssignShards({Gpus(1, 2), Gpus(10, 8), Gpus(20, 4)}, {}, 2);
  EXPECT_EQ(m.at(Gpus(10, 1)[0]).shard, 0);  // 8 GPUs first, to shard 0
  EXPECT_EQ(m.at(Gpus(20, 1)[0]).shard, 1);  // 4 to shard 1
  EXPECT_EQ(m.at(Gpus(1, 1)[0]).shard, 1);   // 2 to shard 1 (4 < 8)
  // The job's key is the id its analyser gives it (service/stable_ids.h): one name for one job.
  EXPECT_EQ(m.at(Gpus(1, 2)[1]).job, StableJobId(Gpus(1, 2)));
  EXPECT_EQ(m.size(), 14u);
}

TEST(AssignShards, AJobThatGrowsOrMergesStaysWhereMostOfItWas) {
  auto m = AssignShards({Gpus(10, 8), Gpus(20, 4)}, {}, 2);
  // Job at 20 grows by 2 GPUs; job at 10 swallows 2 GPUs of nobody.
  auto grown = AssignShards({Gpus(8, 10), Gpus(20, 6)}, m, 2);
  EXPECT_EQ(grown.at(Gpus(8, 1)[0]).shard, 0);
  EXPECT_EQ(grown.at(Gpus(8, 1)[0]).job, StableJobId(Gpus(10, 8)));  // keeps its key
  EXPECT_EQ(grown.at(Gpus(25, 1)[0]).shard, 1);
  // Both merge into one job: the larger part's shard.
  auto merged = AssignShards({[] {
                               auto a = Gpus(8, 10), b = Gpus(20, 6);
                               a.insert(a.end(), b.begin(), b.end());
                               return a;
                             }()},
                             grown, 2);
  EXPECT_EQ(merged.at(Gpus(25, 1)[0]).shard, 0);
}

TEST(PairGraph, KeepsTheLastWindowAndRecognisesItsJobs) {
  PairGraph g(20 * kS);
  const auto a = Gpus(1, 4), b = Gpus(10, 2);
  EXPECT_TRUE(g.Add({0, a[0], a[1]}));
  EXPECT_FALSE(g.Add({0, a[1], a[0]}));  // the same unordered pair
  EXPECT_TRUE(g.Add({5 * kS, a[2], a[3]}));
  EXPECT_TRUE(g.Add({10 * kS, a[1], a[2]}));
  EXPECT_TRUE(g.Add({15 * kS, b[0], b[1]}));
  // Without a topology every endpoint is a GPU on its own host.
  auto jobs = JobsOfPairs(g.Pairs(), nullptr, {});
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0], a);
  EXPECT_EQ(jobs[1], b);
  EXPECT_TRUE(g.Add({25 * kS, b[0], b[1]}));  // the buckets at 0 and 5 s leave the window
  jobs = JobsOfPairs(g.Pairs(), nullptr, {});
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0], std::vector<IpAddr>({a[1], a[2]}));
  EXPECT_FALSE(g.Add({0, a[0], a[3]}));  // older than the window: not taken
}

}  // namespace
}  // namespace prism::service
