#include "scaleout/shard_map.h"

#include <gtest/gtest.h>

#include "scaleout/shard_table.h"

namespace prism::scaleout {
namespace {

TEST(ShardMap, KeysAndValuesRoundTrip) {
  for (const char* a : {"10.1.2.3", "fd00::a:1"}) {
    const IpAddr gpu = *IpAddr::Parse(a);
    const std::string key = GpuKey(gpu);
    EXPECT_EQ(key.find(':'), std::string::npos) << key;  // not allowed in key-value keys
    EXPECT_EQ(GpuFromKey(key), gpu);
  }
  EXPECT_FALSE(GpuFromKey("other.10.1.2.3"));
  const ShardEntry e{3, "10.1.2.3"};
  EXPECT_EQ(DecodeShardEntry(EncodeShardEntry(e)), e);
  EXPECT_FALSE(DecodeShardEntry("x 10.1.2.3"));
  EXPECT_FALSE(DecodeShardEntry("-1 10.1.2.3"));
  EXPECT_FALSE(DecodeShardEntry("3"));
  EXPECT_EQ(ShardSubject(2), "records.shard.2.jobs");
  EXPECT_EQ(ShardSubjects(2), "records.shard.2.>");
}

TEST(ShardTable, RoutesBySourceThenDestination) {
  ShardTable t;
  ASSERT_TRUE(t.Apply({GpuKey(*IpAddr::Parse("10.0.0.1")), "1 10.0.0.1", false}));
  ASSERT_TRUE(t.Apply({GpuKey(*IpAddr::Parse("10.0.0.2")), "0 10.0.0.2", false}));
  EXPECT_FALSE(t.Apply({"gpu.10.0.0.3", "garbage", false}));
  EXPECT_FALSE(t.Apply({"something", "1 x", false}));
  FlowRecord r;
  r.src = *IpAddr::Parse("10.0.0.1");
  r.dst = *IpAddr::Parse("10.0.0.2");
  EXPECT_EQ(t.ShardOf(r), 1);
  r.src = *IpAddr::Parse("10.9.9.9");  // storage, say: goes with its GPU peer
  EXPECT_EQ(t.ShardOf(r), 0);
  EXPECT_EQ(t.SubjectOf(r, kUnroutedSubject), "records.shard.0.jobs");
  r.dst = *IpAddr::Parse("10.9.9.8");
  EXPECT_FALSE(t.ShardOf(r));
  // Neither end mapped: a collector sends it to the recogniser, which (having recognised) sends
  // it to shard 0's subject of records in no job.
  EXPECT_EQ(t.SubjectOf(r, kUnroutedSubject), "records.unrouted");
  EXPECT_EQ(t.SubjectOf(r, NoJobSubject()), "records.shard.0.other");
  ASSERT_TRUE(t.Apply({GpuKey(*IpAddr::Parse("10.0.0.2")), "", true}));
  EXPECT_EQ(t.size(), 1u);
}

}  // namespace
}  // namespace prism::scaleout
