#include "service/stable_ids.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace prism::service {
namespace {

// The hash is part of the ids' meaning (stores and alerts keep them): pinned to FNV-1a's
// published values, so a change of function shows here, not as renamed jobs.
TEST(StableIds, HashIsFnv1a64) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(StableIds, JobIdIsTheHashOfItsGpus) {
  const std::vector<IpAddr> gpus = {*IpAddr::Parse("10.0.0.1"), *IpAddr::Parse("10.0.0.2")};
  const std::string id = StableJobId(gpus);
  EXPECT_EQ(id, fmt::format("job-{:012x}", Fnv1a64("10.0.0.1,10.0.0.2,") >> 16));
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(StableJobId(gpus, 2), id + "-2");
  EXPECT_NE(StableJobId({gpus[0]}), id);
}

TEST(StableIds, FindingIdsStayAboveOldNumbersAndExactInJson) {
  const int64_t lo = int64_t{1} << 32, hi = int64_t{1} << 53;
  const int64_t id = StableFindingId("slow_step|job-1||", 60);
  EXPECT_EQ(StableFindingId("slow_step|job-1||", 60), id);
  EXPECT_NE(StableFindingId("slow_step|job-1||", 70), id);
  EXPECT_NE(StableFindingId("slow_step|job-2||", 60), id);
  EXPECT_GE(id, lo);
  EXPECT_LT(id, hi);
  EXPECT_EQ(NextFindingId(id), id + 1 < hi ? id + 1 : lo);
  EXPECT_EQ(NextFindingId(hi - 1), lo);
}

}  // namespace
}  // namespace prism::service
