#include "service/clock_guard.h"

#include <gtest/gtest.h>

#include <vector>

namespace prism::service {
namespace {

constexpr int64_t kS = 1'000'000'000;

FlowRecord Rec(int64_t start_s, double dur_s = 0.05) {
  FlowRecord r;
  r.start_ns = start_s * kS;
  r.end_ns = r.start_ns + static_cast<int64_t>(dur_s * 1e9);
  return r;
}

TEST(PlausibleTime, DurationAndExportTime) {
  TimePlausibility o;
  const int64_t now = 1'700'000'100 * kS;
  EXPECT_TRUE(PlausibleTime(Rec(1'700'000'099), now, o));
  EXPECT_TRUE(PlausibleTime(Rec(1'700'000'099), kNoReferenceNs, o));
  EXPECT_FALSE(PlausibleTime(Rec(0), now, o));                   // 1970, exported now
  EXPECT_TRUE(PlausibleTime(Rec(0), kNoReferenceNs, o));         // a file: any age
  EXPECT_FALSE(PlausibleTime(Rec(4'102'444'800), now, o));       // 2100, exported now
  EXPECT_TRUE(PlausibleTime(Rec(1'700'000'150), now, o));        // 50 s after export: skew
  EXPECT_FALSE(PlausibleTime(Rec(1'700'000'200), now, o));       // 100 s after
  EXPECT_FALSE(PlausibleTime(Rec(1'700'000'000 - 7200, 7200 + 99), now, o));  // lasts 2 h
  FlowRecord back = Rec(1'700'000'099);
  back.end_ns = back.start_ns - 1;
  EXPECT_FALSE(PlausibleTime(back, kNoReferenceNs, o));          // ends before it starts
}

TEST(ExportTime, IpfixAndNetflowV9Headers) {
  const uint8_t ipfix[16] = {0, 10, 0, 16, 0x65, 0x53, 0xf1, 0x00, 0, 0, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(ExportTimeNs(ipfix, sizeof ipfix), int64_t{0x6553f100} * kS);
  const uint8_t v9[20] = {0, 9, 0, 1, 0, 0, 0, 5, 0x65, 0x53, 0xf1, 0x00};
  EXPECT_EQ(ExportTimeNs(v9, sizeof v9), int64_t{0x6553f100} * kS);
  const uint8_t other[16] = {0, 5};
  EXPECT_EQ(ExportTimeNs(other, sizeof other), kNoReferenceNs);
  EXPECT_EQ(ExportTimeNs(ipfix, 4), kNoReferenceNs);
}

// One datagram far ahead while the stream goes on: held, then refused; the clock never moves.
TEST(ClockGuard, AnOutlierAheadIsRefusedWhileTheStreamGoesOn) {
  ClockGuard g({.max_jump_ns = 60 * kS, .confirm_wall_ns = 3 * kS});
  const int64_t newest = 1000 * kS, oldest = 940 * kS;
  EXPECT_EQ(g.Check(Rec(1001), 0, newest, oldest, 0), ClockGuard::Verdict::kAdd);
  EXPECT_EQ(g.Check(Rec(5000), 0, newest, oldest, 1 * kS), ClockGuard::Verdict::kHold);
  g.NoteAdded();  // the stream goes on at the old clock
  std::vector<ClockGuard::Held> release, refused;
  bool behind = true;
  g.Tick(3 * kS, &release, &behind, &refused);
  EXPECT_TRUE(release.empty() && refused.empty());  // not yet: 2 s held
  g.Tick(4 * kS + 1, &release, &behind, &refused);
  EXPECT_TRUE(release.empty());
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].record.start_ns, 5000 * kS);
  EXPECT_EQ(g.held(), 0u);
}

// The whole stream moves (a pause, then traffic a long time later): nothing in range arrives, so
// after the confirmation time (or a quorum) the held records are released and the clock follows.
TEST(ClockGuard, TheStreamMovingIsFollowed) {
  ClockGuard g({.max_jump_ns = 60 * kS, .confirm_wall_ns = 3 * kS, .quorum = 100});
  const int64_t newest = 1000 * kS, oldest = 940 * kS;
  g.NoteAdded();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(g.Check(Rec(2000 + i), 1, newest, oldest, 1 * kS), ClockGuard::Verdict::kHold);
  }
  std::vector<ClockGuard::Held> release, refused;
  bool behind = true;
  g.Tick(2 * kS, &release, &behind, &refused);
  EXPECT_TRUE(release.empty());
  g.Tick(4 * kS, &release, &behind, &refused);
  EXPECT_EQ(release.size(), 10u);
  EXPECT_FALSE(behind);
  EXPECT_TRUE(refused.empty());
  // A quorum moves it at once; and so does a move back in time (behind the oldest open window).
  for (int i = 0; i < 100; ++i) g.Check(Rec(100 + i), 0, newest, oldest, 10 * kS);
  release.clear();
  g.Tick(10 * kS, &release, &behind, &refused);
  EXPECT_EQ(release.size(), 100u);
  EXPECT_TRUE(behind);
}

// A backlog read at once across a pause in the traffic: the records before the pause are added,
// those after it are held, all in one read (one wall time). Only records added after a held one
// contest it, so nothing after this one's hold: released with the stream, not refused. A record
// in range read after it in the same read does contest it.
TEST(ClockGuard, RecordsReadBeforeAHeldOneDoNotContestIt) {
  const int64_t newest = 1000 * kS, oldest = 940 * kS, read_wall = 1 * kS;
  std::vector<ClockGuard::Held> release, refused;
  bool behind = true;
  {
    ClockGuard g({.max_jump_ns = 60 * kS, .confirm_wall_ns = 3 * kS});
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(g.Check(Rec(990 + i), 0, newest, oldest, read_wall), ClockGuard::Verdict::kAdd);
      g.NoteAdded();
    }
    EXPECT_EQ(g.Check(Rec(1200), 0, newest, oldest, read_wall), ClockGuard::Verdict::kHold);
    g.Tick(read_wall + 3 * kS, &release, &behind, &refused);
    EXPECT_TRUE(refused.empty());
    ASSERT_EQ(release.size(), 1u);
    EXPECT_EQ(release[0].record.start_ns, 1200 * kS);
    EXPECT_FALSE(behind);
  }
  release.clear();
  {
    ClockGuard g({.max_jump_ns = 60 * kS, .confirm_wall_ns = 3 * kS});
    EXPECT_EQ(g.Check(Rec(1200), 0, newest, oldest, read_wall), ClockGuard::Verdict::kHold);
    g.NoteAdded();  // in range, read after the held one
    g.Tick(read_wall + 3 * kS, &release, &behind, &refused);
    EXPECT_TRUE(release.empty());
    EXPECT_EQ(refused.size(), 1u);
  }
}

TEST(ClockGuard, BoundedAndOneDirectionAtATime) {
  ClockGuard g({.max_jump_ns = 60 * kS, .confirm_wall_ns = 3 * kS, .quorum = 1000, .max_held = 5});
  const int64_t newest = 1000 * kS, oldest = 940 * kS;
  for (int i = 0; i < 5; ++i) g.Check(Rec(5000), 0, newest, oldest, 0);
  EXPECT_EQ(g.Check(Rec(5000), 0, newest, oldest, 0), ClockGuard::Verdict::kRefuse);  // full
  ClockGuard h({.max_jump_ns = 60 * kS});
  EXPECT_EQ(h.Check(Rec(5000), 0, newest, oldest, 0), ClockGuard::Verdict::kHold);
  EXPECT_EQ(h.Check(Rec(10), 0, newest, oldest, 0), ClockGuard::Verdict::kRefuse);  // behind
  // Before the first record nothing is out of range: the first record sets the clock.
  EXPECT_EQ(h.Check(Rec(10), 0, INT64_MIN, INT64_MIN, 0), ClockGuard::Verdict::kAdd);
}

}  // namespace
}  // namespace prism::service
