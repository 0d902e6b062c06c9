#include "scaleout/stream_checkpoint.h"

#include <gtest/gtest.h>

namespace prism::scaleout {
namespace {

constexpr int64_t kS = 1'000'000'000;

TEST(StreamCheckpoint, LastWindowHoldingARecordEndsOneWindowAfterItsStep) {
  StreamCheckpoint c(60 * kS, 10 * kS, 1);
  EXPECT_EQ(c.LastWindowEnd(0), 60 * kS);
  EXPECT_EQ(c.LastWindowEnd(9 * kS), 60 * kS);
  EXPECT_EQ(c.LastWindowEnd(10 * kS), 70 * kS);
  EXPECT_EQ(c.LastWindowEnd(-1), 50 * kS);  // floor, not truncation
}

TEST(StreamCheckpoint, ResumesAtTheFirstMessageALaterWindowStillNeeds) {
  StreamCheckpoint c(60 * kS, 10 * kS, 1);
  c.Read(1, true, 5 * kS);    // last held by the window ending at 60 s
  c.Read(2, true, 25 * kS);   // ... 80 s
  c.Read(3, true, 12 * kS);   // ... 70 s: out of order with 2
  c.Read(4, false, 0);        // no records: done at once
  EXPECT_EQ(c.ResumeSequence(50 * kS), 1u);
  EXPECT_EQ(c.ResumeSequence(60 * kS), 2u);
  EXPECT_EQ(c.ResumeSequence(70 * kS), 2u);  // 3 is done, 2 is not
  EXPECT_EQ(c.open_messages(), 1u);
  EXPECT_EQ(c.ResumeSequence(80 * kS), 5u);  // all done: one past the last read
  EXPECT_EQ(c.open_messages(), 0u);
}

TEST(StreamCheckpoint, StartsWhereTheLastRunLeftOff) {
  StreamCheckpoint c(60 * kS, 10 * kS, 42);
  EXPECT_EQ(c.ResumeSequence(0), 42u);
  c.Read(42, true, 100 * kS);
  EXPECT_EQ(c.ResumeSequence(100 * kS), 42u);
  EXPECT_EQ(c.ResumeSequence(160 * kS), 43u);
}

TEST(StreamCheckpoint, RecordsBeforeTheFirstUncommittedStartBelongOnlyToCommittedWindows) {
  const int64_t first = StreamCheckpoint::FirstUncommittedStart(120 * kS, 60 * kS, 10 * kS);
  EXPECT_EQ(first, 70 * kS);
  StreamCheckpoint c(60 * kS, 10 * kS, 1);
  EXPECT_LE(c.LastWindowEnd(first - 1), 120 * kS);
  EXPECT_GT(c.LastWindowEnd(first), 120 * kS);
}

}  // namespace
}  // namespace prism::scaleout
