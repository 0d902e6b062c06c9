#include "sim/congestion_log.h"

#include <gtest/gtest.h>

namespace prism::sim {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

// `squeezed` of `n` transfers of 1,000 bytes on the link in second `s`.
void Second(CongestionLog* log, int leaf, int spine, bool up, int s, int n, int squeezed) {
  for (int i = 0; i < n; ++i) {
    log->Note(leaf, spine, up, kT0 + s * kSec + i * 1'000'000, 1000, i < squeezed);
  }
}

TEST(CongestionLog, RunsOfCongestedSecondsBecomeEvents) {
  CongestionLog log;
  // Link (3, 7, up): seconds 0-1 congested, 2 clear (1 of 10 squeezed), 3 congested: one run of
  // 4 s; 6-7 congested again after two clear seconds: 2 s, too short.
  Second(&log, 3, 7, true, 0, 10, 9);
  Second(&log, 3, 7, true, 1, 10, 2);
  Second(&log, 3, 7, true, 2, 10, 1);
  Second(&log, 3, 7, true, 3, 4, 4);
  Second(&log, 3, 7, true, 6, 8, 8);
  Second(&log, 3, 7, true, 7, 8, 6);
  // Link (3, 7, down): 3 s congested but for a 1-s gap; link (4, 7, up): too few transfers.
  Second(&log, 3, 7, false, 0, 10, 10);
  Second(&log, 3, 7, false, 2, 10, 10);
  for (int s = 0; s < 4; ++s) Second(&log, 4, 7, true, s, 3, 3);
  const std::vector<CongestionEvent> events = log.Events();
  ASSERT_EQ(events.size(), 2u);  // (leaf, spine, up) order: down first
  EXPECT_FALSE(events[0].up);
  EXPECT_EQ(events[0].start_ns, kT0);
  EXPECT_EQ(events[0].end_ns, kT0 + 3 * kSec);
  EXPECT_EQ(events[1].leaf, 3);
  EXPECT_EQ(events[1].spine, 7);
  EXPECT_TRUE(events[1].up);
  EXPECT_EQ(events[1].start_ns, kT0);
  EXPECT_EQ(events[1].end_ns, kT0 + 4 * kSec);
  EXPECT_DOUBLE_EQ(events[1].squeezed_share, 15.0 / 24.0);  // congested seconds 0, 1, 3
}

TEST(CongestionLog, SecondsBeforeTheEpochFloor) {
  CongestionLog log;
  for (int i = 0; i < 4; ++i) log.Note(1, 2, true, -2 * kSec + i, 10, true);
  log.Note(1, 2, true, -kSec / 2, 10, true);
  for (int i = 0; i < 4; ++i) log.Note(1, 2, true, -kSec + i, 10, true);
  for (int i = 0; i < 4; ++i) log.Note(1, 2, true, i, 10, true);
  const std::vector<CongestionEvent> events = log.Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].start_ns, -2 * kSec);
  EXPECT_EQ(events[0].end_ns, kSec);
}

// Bytes decide, not transfers: a few large squeezed transfers beside many small free ones.
TEST(CongestionLog, BytesNotTransfersDecide) {
  CongestionLog log;
  for (int s = 0; s < 3; ++s) {
    log.Note(5, 9, false, kT0 + s * kSec, 64 << 20, true);
    for (int i = 1; i < 20; ++i) log.Note(5, 9, false, kT0 + s * kSec + i, 4096, false);
  }
  ASSERT_EQ(log.Events().size(), 1u);
  EXPECT_GT(log.Events()[0].squeezed_share, 0.99);
  // Below a fifth of the bytes squeezed: no event.
  CongestionLog light;
  for (int s = 0; s < 3; ++s) {
    light.Note(5, 9, false, kT0 + s * kSec, 1000, true);
    for (int i = 1; i < 5; ++i) light.Note(5, 9, false, kT0 + s * kSec + i, 1001, false);
  }
  EXPECT_TRUE(light.Events().empty());
}

}  // namespace
}  // namespace prism::sim
