#include "ingest/ipfix/sequence_tracker.h"

#include <gtest/gtest.h>

#include <vector>

namespace prism::ingest {
namespace {

// Feeds messages of `counts` data records numbered as the RFC says (records before the message),
// starting at `first`; returns the sequence number the next message would carry.
uint32_t FeedRfc(SequenceTracker* t, uint64_t stream, uint32_t first,
                 const std::vector<uint32_t>& counts, uint64_t* lost) {
  uint32_t seq = first;
  for (uint32_t n : counts) {
    *lost += t->Observe(stream, seq, n, 0, true).lost;
    seq += n;
  }
  return seq;
}

TEST(SequenceTracker, InOrderMessagesLoseNothing) {
  SequenceTracker t;
  uint64_t lost = 0;
  FeedRfc(&t, 1, 0, {20, 20, 0, 5, 20, 7, 20}, &lost);
  EXPECT_EQ(lost, 0u);
}

TEST(SequenceTracker, AGapIsTheRecordsOfTheLostMessages) {
  SequenceTracker t;
  uint64_t lost = 0;
  uint32_t next = FeedRfc(&t, 1, 100, {20, 20, 20, 20}, &lost);
  // Two messages of 20 records lost.
  const auto gap = t.Observe(1, next + 40, 20, 0, true);
  EXPECT_EQ(gap.lost, 40u);
  EXPECT_FALSE(gap.went_back);
  EXPECT_EQ(t.Observe(1, next + 60, 20, 0, true).lost, 0u);
}

TEST(SequenceTracker, NothingIsCountedBeforeTheConventionIsLearned) {
  SequenceTracker t;
  t.Observe(1, 0, 20, 0, true);
  EXPECT_EQ(t.Observe(1, 100, 20, 0, true).lost, 0u);  // a gap while learning: learn again
  uint64_t lost = 0;
  const uint32_t next = FeedRfc(&t, 1, 120, {20, 20, 20}, &lost);
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(t.Observe(1, next + 20, 20, 0, true).lost, 20u);
}

// softflowd: the number counts the records through this message, options records left out.
TEST(SequenceTracker, LearnsAnExporterThatCountsThroughTheMessage) {
  SequenceTracker t;
  const uint32_t data[] = {20, 27, 27, 27, 27, 30, 20, 27};
  const uint32_t options[] = {1, 0, 0, 0, 0, 0, 0, 1};
  uint32_t total = 0;
  for (size_t i = 0; i < std::size(data); ++i) {
    total += data[i];
    const auto gap = t.Observe(1, total, data[i], options[i], true);
    EXPECT_EQ(gap.lost, 0u) << i;
    EXPECT_FALSE(gap.went_back) << i;
  }
  total += 27 + 27;  // one message of 27 lost
  EXPECT_EQ(t.Observe(1, total, 27, 0, true).lost, 27u);
}

TEST(SequenceTracker, StreamsAreCountedApart) {
  SequenceTracker t;
  uint64_t lost = 0;
  const uint32_t a = FeedRfc(&t, 1, 0, {10, 10, 10, 10}, &lost);
  const uint32_t b = FeedRfc(&t, 2, 500, {10, 10, 10, 10}, &lost);
  EXPECT_EQ(t.Observe(1, a, 10, 0, true).lost, 0u);
  EXPECT_EQ(t.Observe(2, b + 10, 10, 0, true).lost, 10u);
  EXPECT_EQ(lost, 0u);
}

TEST(SequenceTracker, WrapsModulo2To32) {
  SequenceTracker t;
  uint64_t lost = 0;
  const uint32_t next = FeedRfc(&t, 1, 0xFFFFFFD0u, {0x10, 0x10, 0x10, 0x10, 0x10}, &lost);
  EXPECT_EQ(next, 0x20u);
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(t.Observe(1, next + 5, 1, 0, true).lost, 5u);
}

TEST(SequenceTracker, GoingBackIsARestartNotLoss) {
  SequenceTracker t;
  uint64_t lost = 0;
  FeedRfc(&t, 1, 5000, {20, 20, 20, 20}, &lost);
  const auto gap = t.Observe(1, 0, 20, 0, true);
  EXPECT_EQ(gap.lost, 0u);
  EXPECT_TRUE(gap.went_back);
  // Relearning from the restart: nothing counted until three transitions agree.
  EXPECT_EQ(t.Observe(1, 20, 20, 0, true).lost, 0u);
}

TEST(SequenceTracker, AnUncountableMessageStartsAfresh) {
  SequenceTracker t;
  uint64_t lost = 0;
  const uint32_t next = FeedRfc(&t, 1, 0, {20, 20, 20, 20}, &lost);
  t.Observe(1, next, 3, 0, false);  // a data set without its template: not all records counted
  EXPECT_EQ(t.Observe(1, next + 20, 20, 0, true).lost, 0u);
  FeedRfc(&t, 1, next + 40, {20, 20, 20}, &lost);
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(t.Observe(1, next + 140, 20, 0, true).lost, 40u);
}

TEST(SequenceTracker, FollowsAtMostMaxStreams) {
  SequenceTracker t(2);
  uint64_t lost = 0;
  FeedRfc(&t, 1, 0, {1, 1, 1, 1}, &lost);
  FeedRfc(&t, 2, 0, {1, 1, 1, 1}, &lost);
  FeedRfc(&t, 3, 0, {1, 1, 1, 1}, &lost);
  EXPECT_EQ(t.Observe(3, 100, 1, 0, true).lost, 0u);  // not followed
  EXPECT_EQ(t.Observe(1, 100, 1, 0, true).lost, 96u);
}

}  // namespace
}  // namespace prism::ingest
