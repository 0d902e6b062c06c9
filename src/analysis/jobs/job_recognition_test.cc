#include "analysis/jobs/job_recognition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include <fmt/format.h>

#include "testing/flow_builder.h"

namespace prism::analysis {
namespace {

using prism::testing::FlowBuilder;

std::string Gpu(int host, int local) { return fmt::format("10.0.{}.{}", host, local + 1); }

// Two jobs of 2 hosts x 8 GPUs (rail-aligned pairs), a storage node talking to both.
struct Fixture {
  flow::FlowTable table;
  Topology topo;
  Fixture(bool storage_in_topology) {
    for (int job = 0; job < 2; ++job)
      for (int local = 0; local < 8; ++local)
        FlowBuilder(Gpu(2 * job, local), Gpu(2 * job + 1, local)).At(local).Bytes(1 << 20).Into(&table);
    for (int h = 0; h < 4; ++h)
      for (int local = 0; local < 8; ++local)
        FlowBuilder("10.9.0.1", Gpu(h, local)).At(100).Bytes(8 << 20).Into(&table);
    for (int h = 0; h < 4; ++h)
      for (int local = 0; local < 8; ++local)
        topo.Add({*IpAddr::Parse(Gpu(h, local)), fmt::format("host{}", h), local, "leaf", EndpointKind::kGpu});
    if (storage_in_topology)
      topo.Add({*IpAddr::Parse("10.9.0.1"), "storage0", -1, "leaf-s", EndpointKind::kStorage});
  }
  JobRecognition Run(const JobRecognitionOptions& options = {}) {
    ctx = BuildEndpointContext(table.endpoints(), &topo);
    return RecognizeJobs(DistinctPairs(table.src(), table.dst()), table.endpoints(), ctx, options);
  }
  EndpointContext ctx;
};

TEST(JobRecognition, NonGpuEndpointsDoNotGlueJobs) {
  Fixture f(/*storage_in_topology=*/true);
  JobRecognition jr = f.Run();
  ASSERT_EQ(jr.jobs.size(), 2u);
  EXPECT_EQ(jr.jobs[0].gpus.size(), 16u);
  EXPECT_EQ(jr.jobs[1].gpus.size(), 16u);
  EXPECT_EQ(jr.jobs[0].hosts, (std::vector<std::string>{"host0", "host1"}));
  EXPECT_EQ(jr.non_gpu_endpoints, 1u);
}

TEST(JobRecognition, UnmarkedHubTouchingManyComponentsIsExcluded) {
  Fixture f(/*storage_in_topology=*/false);  // the storage node looks like a GPU
  JobRecognitionOptions o;
  o.hub_min_peers = 16;
  o.hub_min_components = 2;
  JobRecognition jr = f.Run(o);
  ASSERT_EQ(jr.jobs.size(), 2u);
  ASSERT_EQ(jr.hubs.size(), 1u);
  EXPECT_EQ(f.table.endpoints().Addr(jr.hubs[0]).ToString(), "10.9.0.1");
}

TEST(JobRecognition, WithoutHubExclusionTheStorageNodeMergesJobs) {
  Fixture f(/*storage_in_topology=*/false);
  JobRecognitionOptions o;
  o.hub_min_peers = 1000;  // never a hub candidate
  EXPECT_EQ(f.Run(o).jobs.size(), 1u);
}

TEST(JobRecognition, HostMergeJoinsRailsOfOneHost) {
  // Rails 0 and 1 of the same two hosts: without the host merge they would be two components.
  flow::FlowTable table;
  FlowBuilder(Gpu(0, 0), Gpu(1, 0)).At(0).Bytes(1 << 20).Into(&table);
  FlowBuilder(Gpu(0, 1), Gpu(1, 1)).At(0).Bytes(1 << 20).Into(&table);
  Topology topo;
  for (int h = 0; h < 2; ++h)
    for (int local = 0; local < 2; ++local)
      topo.Add({*IpAddr::Parse(Gpu(h, local)), fmt::format("host{}", h), local, "", EndpointKind::kGpu});
  auto ctx = BuildEndpointContext(table.endpoints(), &topo);
  auto jr = RecognizeJobs(DistinctPairs(table.src(), table.dst()), table.endpoints(), ctx, {});
  ASSERT_EQ(jr.jobs.size(), 1u);
  EXPECT_EQ(jr.jobs[0].gpus.size(), 4u);
  // Without topology every endpoint is its own host: two jobs.
  auto bare = BuildEndpointContext(table.endpoints(), nullptr);
  EXPECT_EQ(RecognizeJobs(DistinctPairs(table.src(), table.dst()), table.endpoints(), bare, {}).jobs.size(),
            2u);
}

}  // namespace
}  // namespace prism::analysis

namespace prism::analysis {
namespace {

// Runs of rows hashed on several threads and merged: the keys of one pass, sorted, once each.
TEST(DistinctPairs, AnyThreadCountGivesTheSameKeys) {
  std::mt19937 rng(5);
  std::vector<EndpointId> src(300'001), dst(300'001);
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = EndpointId(rng() % 700);
    dst[i] = EndpointId(i % 3 == 0 ? src[i] : rng() % 700);  // repeats of a row's pair too
  }
  std::vector<uint64_t> want;
  for (size_t i = 0; i < src.size(); ++i) want.push_back(PairKey(src[i], dst[i]));
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  for (int threads : {1, 2, 3, 4}) {
    SCOPED_TRACE(threads);
    EXPECT_EQ(DistinctPairs(src, dst, threads), want);
    // And each row's pair among them: the key the row's endpoints make, whichever run hashed it.
    const RowPairs rows = NumberRowPairs(src, dst, threads);
    ASSERT_EQ(rows.keys, want);
    ASSERT_EQ(rows.key_of_row.size(), src.size());
    size_t wrong = 0;
    for (size_t i = 0; i < src.size(); ++i)
      wrong += rows.keys[rows.key_of_row[i]] != PairKey(src[i], dst[i]);
    EXPECT_EQ(wrong, 0u);
  }
}

// The keys listed in the order of their pair's first row, each once, whichever run met it first.
TEST(NumberRowPairs, ListsKeysInTheOrderOfTheirFirstRow) {
  std::mt19937 rng(11);
  std::vector<EndpointId> src(300'001), dst(300'001);
  // Pairs of low endpoints early, of high ones only late (first met in a later run), and a
  // pair met early again in every run.
  for (size_t i = 0; i < src.size(); ++i) {
    const EndpointId base = i < 100'000 ? 0 : 500;
    src[i] = EndpointId(i % 5 == 0 ? 1 : base + rng() % 300);
    dst[i] = EndpointId(i % 5 == 0 ? 2 : base + rng() % 300);
  }
  std::vector<uint64_t> want;  // keys by first row, from one pass
  std::set<uint64_t> met;
  for (size_t i = 0; i < src.size(); ++i)
    if (met.insert(PairKey(src[i], dst[i])).second) want.push_back(PairKey(src[i], dst[i]));
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(threads);
    const RowPairs rows = NumberRowPairs(src, dst, threads);
    std::vector<uint64_t> got;
    for (uint32_t k : rows.keys_by_first_row) got.push_back(rows.keys[k]);
    EXPECT_EQ(got, want);
  }
}

}  // namespace
}  // namespace prism::analysis
