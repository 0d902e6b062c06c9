#include "service/fabric_stage.h"

#include <gtest/gtest.h>

namespace prism::service {
namespace {

using Clock = FabricWindows::Clock;
using diagnosis::FabricContribution;

FabricContribution Records(int64_t first_start_ns) {
  FabricContribution c;
  c.first_start_ns = c.last_start_ns = first_start_ns;
  return c;
}

TEST(FabricWindows, AWindowIsReadyOnceEveryShardsContributionIsIn) {
  FabricWindows w({.shards = 2, .wait = std::chrono::seconds(40)}, INT64_MIN);
  const auto t = Clock::now();
  EXPECT_EQ(w.Add(20, 1, Records(5), 7, t), FabricWindows::AddResult::kAdded);
  EXPECT_FALSE(w.TakeReady(t).has_value());
  EXPECT_EQ(w.ResumeSequence(9), 7u);
  EXPECT_EQ(w.Add(20, 1, Records(6), 8, t), FabricWindows::AddResult::kDuplicate);
  EXPECT_EQ(w.Add(20, 0, Records(3), 9, t), FabricWindows::AddResult::kAdded);
  auto r = w.TakeReady(t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->window_end_ns, 20);
  EXPECT_TRUE(r->missing.empty());
  ASSERT_EQ(r->parts.size(), 2u);
  EXPECT_EQ(r->parts[0].first_start_ns, 3);  // shard order, the first copy kept
  EXPECT_EQ(r->parts[1].first_start_ns, 5);
  EXPECT_EQ(w.ResumeSequence(10), 10u);
  EXPECT_EQ(w.Add(20, 0, Records(3), 11, t), FabricWindows::AddResult::kAlreadyJudged);
  EXPECT_EQ(w.Add(20, 2, Records(3), 12, t), FabricWindows::AddResult::kBadShard);
}

TEST(FabricWindows, OldestFirstAndAMissingShardWaitsItOut) {
  FabricWindows w({.shards = 2, .wait = std::chrono::seconds(40)}, INT64_MIN);
  const auto t = Clock::now();
  w.Add(20, 0, Records(1), 1, t);
  w.Add(25, 0, Records(2), 2, t);
  w.Add(25, 1, Records(2), 3, t);
  // 20 lacks shard 1, which has sent 25 already: a shard publishes its windows in order, so its
  // 20 is not coming, and 20 is judged without it at once (then 25, complete).
  auto r = w.TakeReady(t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->window_end_ns, 20);
  EXPECT_EQ(r->missing, std::vector<int>{1});
  EXPECT_FALSE(r->waited_out);
  r = w.TakeReady(t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->window_end_ns, 25);
  // A window whose missing shard has sent nothing later waits `wait`, then goes without it.
  w.Add(30, 0, Records(3), 4, t);
  EXPECT_FALSE(w.TakeReady(t + std::chrono::seconds(39)).has_value());
  r = w.TakeReady(t + std::chrono::seconds(40));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->missing, std::vector<int>{1});
  EXPECT_TRUE(r->waited_out);
  EXPECT_EQ(w.judged_up_to_ns(), 30);
}

// A shard whose jobs paused publishes an empty contribution for the windows it had no record
// of: such a window is whole (no shard missing), judged as soon as the others are in; a shard
// that sent nothing for a window is still missing from it, however the others' looked.
TEST(FabricWindows, AnEmptyContributionMakesTheWindowWholeANoneDoesNot) {
  FabricWindows w({.shards = 3, .wait = std::chrono::seconds(40)}, INT64_MIN);
  const auto t = Clock::now();
  ASSERT_TRUE(FabricContribution().empty());
  ASSERT_FALSE(Records(4).empty());
  FabricContribution skipped_all;  // records, none the rule reads: not empty
  skipped_all.first_start_ns = 1;
  skipped_all.last_start_ns = 2;
  ASSERT_FALSE(skipped_all.empty());
  w.Add(20, 0, Records(1), 1, t);
  w.Add(20, 1, FabricContribution(), 2, t);
  EXPECT_FALSE(w.TakeReady(t).has_value());  // shard 2 not in yet
  w.Add(20, 2, skipped_all, 3, t);
  auto r = w.TakeReady(t);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->missing.empty());
  ASSERT_EQ(r->parts.size(), 3u);
  EXPECT_TRUE(r->parts[1].empty());
  EXPECT_EQ(diagnosis::MergeFabricContributions(r->parts).first_start_ns, 1);
  // 25: shard 1 empty, shard 2 nothing and then its 30: 25 goes without shard 2 only.
  w.Add(25, 0, Records(6), 4, t);
  w.Add(25, 1, FabricContribution(), 5, t);
  w.Add(30, 2, Records(8), 6, t);
  r = w.TakeReady(t);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->window_end_ns, 25);
  EXPECT_EQ(r->missing, std::vector<int>{2});
}

TEST(FabricWindows, WindowsJudgedBeforeARestartAreNotJudgedAgain) {
  FabricWindows w({.shards = 1}, 25);
  const auto t = Clock::now();
  EXPECT_EQ(w.Add(25, 0, Records(1), 1, t), FabricWindows::AddResult::kAlreadyJudged);
  EXPECT_EQ(w.Add(30, 0, Records(1), 2, t), FabricWindows::AddResult::kAdded);
  EXPECT_EQ(w.TakeReady(t)->window_end_ns, 30);
}

}  // namespace
}  // namespace prism::service
