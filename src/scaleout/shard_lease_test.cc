#include "scaleout/shard_lease.h"

#include <gtest/gtest.h>

namespace prism::scaleout {
namespace {

using std::chrono::milliseconds;

TEST(ShardLease, KeysAndValuesRoundTrip) {
  EXPECT_EQ(ShardLeaseKey(3), "shard.3");
  EXPECT_EQ(ShardFromLeaseKey("shard.3"), 3);
  EXPECT_EQ(ShardFromLeaseKey("shard."), std::nullopt);
  EXPECT_EQ(ShardFromLeaseKey("shard.3x"), std::nullopt);
  EXPECT_EQ(ShardFromLeaseKey("analyser.a"), std::nullopt);
  EXPECT_EQ(MemberFromKey(MemberKey("host-42")), "host-42");
  EXPECT_EQ(LeaseName("my.host:7"), "my_host_7");

  auto held = DecodeShardLease(EncodeShardLease({"host-42", 1'700'000'000'000'000'000}));
  ASSERT_TRUE(held);
  EXPECT_EQ(held->holder, "host-42");
  EXPECT_EQ(held->committed_end_ns, 1'700'000'000'000'000'000);
  auto free = DecodeShardLease(EncodeShardLease({"", 5}));
  ASSERT_TRUE(free);
  EXPECT_TRUE(free->free());
  EXPECT_EQ(free->committed_end_ns, 5);
  EXPECT_FALSE(DecodeShardLease("host-42"));
  EXPECT_FALSE(DecodeShardLease("host-42 12x"));
  EXPECT_FALSE(DecodeShardLease(" 12"));
}

TEST(ShardLease, LapsesOnlyWhenItsRevisionStaysTheSameForTheTtl) {
  LeaseClock clock(milliseconds(5000));
  const auto t0 = LeaseClock::Clock::time_point() + std::chrono::hours(1);
  EXPECT_FALSE(clock.Lapsed("shard.0", t0));  // never seen
  clock.Observe("shard.0", 7, t0);
  EXPECT_FALSE(clock.Lapsed("shard.0", t0 + milliseconds(4999)));
  clock.Observe("shard.0", 8, t0 + milliseconds(4000));  // renewed
  EXPECT_FALSE(clock.Lapsed("shard.0", t0 + milliseconds(8999)));
  EXPECT_TRUE(clock.Lapsed("shard.0", t0 + milliseconds(9000)));
  EXPECT_EQ(clock.Unchanged("shard.0", t0 + milliseconds(9500)), milliseconds(5500));
  clock.Observe("shard.0", 8, t0 + milliseconds(9500));  // same revision: still lapsed
  EXPECT_TRUE(clock.Lapsed("shard.0", t0 + milliseconds(9500)));
}

TEST(ShardLease, FairShareIsShardsOverLiveAnalysersRoundedUp) {
  EXPECT_EQ(FairShare(2, 2), 1);
  EXPECT_EQ(FairShare(2, 1), 2);
  EXPECT_EQ(FairShare(3, 2), 2);
  EXPECT_EQ(FairShare(2, 0), 2);
}

ShardState Held(const std::string& holder, bool lapsed) {
  return ShardState{true, ShardLease{holder, 0}, lapsed};
}

TEST(ShardLease, TwoAnalysersSplitTwoShardsAndOneSurvivorTakesBoth) {
  const std::vector<ShardState> none(2);
  // Two alive: one each, the lowest shard first.
  EXPECT_EQ(ShardsToTake(none, {}, 2), std::vector<int>{0});
  EXPECT_EQ(ShardsToTake({Held("a", false), ShardState{}}, {}, 2), std::vector<int>{1});
  // Holding its share already: nothing more, even with a free shard.
  EXPECT_TRUE(ShardsToTake({Held("b", false), ShardState{}}, {0}, 2).empty());
  // The other analyser's lease lapsed and it is no longer counted alive: take it over.
  EXPECT_EQ(ShardsToTake({Held("b", false), Held("a", true)}, {0}, 1), std::vector<int>{1});
  // Alive but not lapsed: never taken.
  EXPECT_TRUE(ShardsToTake({Held("b", false), Held("a", false)}, {0}, 1).empty());
  // Free (released) and never-held shards before lapsed ones.
  EXPECT_EQ(ShardsToTake({Held("a", true), ShardState{true, ShardLease{"", 9}, false},
                          ShardState{}},
                         {}, 1),
            (std::vector<int>{1, 2, 0}));
}

}  // namespace
}  // namespace prism::scaleout
