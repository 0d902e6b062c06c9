#include "service/window_buffer.h"

#include <gtest/gtest.h>

#include <vector>

namespace prism::service {
namespace {

constexpr int64_t kS = 1'000'000'000;

FlowRecord Rec(int64_t start_s, double dur_s = 0.1) {
  FlowRecord r;
  r.start_ns = start_s * kS;
  r.end_ns = r.start_ns + static_cast<int64_t>(dur_s * 1e9);
  r.src = IpAddr::FromV4(0x0a000001);
  r.dst = IpAddr::FromV4(0x0a000002);
  r.bytes = 1;
  return r;
}

WindowBufferOptions Opts() {
  WindowBufferOptions o;
  o.window_ns = 60 * kS;
  o.step_ns = 10 * kS;
  o.reorder_ns = 5 * kS;
  return o;
}

std::vector<int64_t> StartsS(const Window& w) {
  std::vector<int64_t> out;
  w.ForEach([&](const BufferedRecord& r) { out.push_back(r.start_ns / kS); });
  return out;
}

TEST(WindowBuffer, FirstWindowIsWholeAndSlidesByStep) {
  WindowBuffer b(Opts());
  Window w;
  for (int64_t t = 1003; t < 1100; ++t) ASSERT_EQ(b.Add(Rec(t)), WindowBuffer::AddResult::kAccepted);
  // First record at 1003 s: the first window is [1000, 1060).
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.start_ns, 1000 * kS);
  EXPECT_EQ(w.end_ns, 1060 * kS);
  EXPECT_EQ(w.records, 57u);
  EXPECT_EQ(StartsS(w).size(), 57u);
  EXPECT_FALSE(w.shortened());
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.start_ns, 1010 * kS);
  EXPECT_EQ(w.end_ns, 1070 * kS);
  EXPECT_EQ(w.records, 60u);
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1080 * kS);
  // Watermark = 1099.1 - 5 = 1094.1: the window ending 1090 is due, 1100 is not.
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1090 * kS);
  EXPECT_FALSE(b.TakeDue(&w));
  // Buckets before the next window's start (1040) are freed.
  EXPECT_EQ(b.size(), static_cast<size_t>(1100 - 1040));
}

// A shard's analyser: its jobs' data starts at 1023 s, the service's at 1003 s (another shard's
// jobs): its first window is the one serve would have taken first, [1000, 1060). An origin a
// window or more before its data is ignored (a new analyser of an old service).
TEST(WindowBuffer, FirstWindowStartsAtTheServicesOriginWithinAWindow) {
  for (const auto& [origin_s, first_start_s] :
       std::vector<std::pair<int64_t, int64_t>>{{1003, 1000}, {963, 1020}}) {
    WindowBufferOptions o = Opts();
    o.origin_ns = [origin_s] { return std::optional<int64_t>(origin_s * kS); };
    WindowBuffer b(o);
    Window w;
    for (int64_t t = 1023; t < 1100; ++t) ASSERT_EQ(b.Add(Rec(t)), WindowBuffer::AddResult::kAccepted);
    ASSERT_TRUE(b.TakeDue(&w));
    EXPECT_EQ(w.start_ns, first_start_s * kS) << "origin " << origin_s;
    EXPECT_EQ(w.end_ns, (first_start_s + 60) * kS);
  }
}

// A shard of a fabric stage whose data starts a window or more after the service's: its first
// window is the first of the grid holding its data, [970, 1030) for data from 1023 s, as one
// serve's windows go on from the origin; within a window of the origin, the origin's window.
TEST(WindowBuffer, AFabricShardStartingLateTakesTheFirstWindowOfTheGridHoldingItsData) {
  for (const auto& [origin_s, first_end_s] :
       std::vector<std::pair<int64_t, int64_t>>{{1003, 1060}, {963, 1030}, {500, 1030}}) {
    WindowBufferOptions o = Opts();
    o.list_empty_windows = true;
    o.origin_ns = [origin_s] { return std::optional<int64_t>(origin_s * kS); };
    WindowBuffer b(o);
    Window w;
    for (int64_t t = 1023; t < 1100; ++t) ASSERT_EQ(b.Add(Rec(t)), WindowBuffer::AddResult::kAccepted);
    ASSERT_TRUE(b.TakeDue(&w));
    EXPECT_EQ(w.end_ns, first_end_s * kS) << "origin " << origin_s;
    EXPECT_EQ(w.records, static_cast<uint64_t>(first_end_s - 1023)) << "origin " << origin_s;
    EXPECT_TRUE(w.empty_before.empty());
  }
}

// A fabric-stage shard's buffer (list_empty_windows) and one record a second over [from, to).
WindowBufferOptions FabricOpts() {
  WindowBufferOptions o = Opts();
  o.list_empty_windows = true;
  return o;
}
void AddEachSecond(WindowBuffer& b, int64_t from_s, int64_t to_s) {
  for (int64_t t = from_s; t < to_s; ++t) {
    ASSERT_EQ(b.Add(Rec(t)), WindowBuffer::AddResult::kAccepted) << t;
  }
}

// A fabric-stage shard caught up with no record while the other shards go on (its records end
// at 1100 s; theirs went on to 1150): the clock they published makes the windows up to it due.
// Those holding its records (up to 1100 + a step) are taken with them, as one serve would take
// them; the ones after its data are passed empty, up to the clock and no further; a record of a
// passed window arriving later is late. Without a clock, its idle flush stops at its own data.
TEST(WindowBuffer, AFabricShardTakesTheOtherShardsClockPastItsOwnData) {
  WindowBuffer b(FabricOpts());
  Window w;
  AddEachSecond(b, 1000, 1100);
  b.Flush();  // idle
  std::vector<int64_t> ends;
  while (b.TakeDue(&w)) {
    ends.push_back(w.end_ns / kS);
    EXPECT_TRUE(w.empty_before.empty());
  }
  EXPECT_EQ(ends, (std::vector<int64_t>{1060, 1070, 1080, 1090, 1100}));
  EXPECT_TRUE(b.TakeEmptyWindows().empty());  // no clock: nothing passed

  // A clock that is not ahead changes nothing.
  b.MoveClockTo(1100 * kS);
  EXPECT_FALSE(b.TakeDue(&w));
  EXPECT_TRUE(b.TakeEmptyWindows().empty());

  b.MoveClockTo(1200 * kS);
  b.MoveClockTo(1150 * kS);  // never back
  EXPECT_EQ(b.clock_ns(), 1200 * kS);
  ends.clear();
  std::vector<uint64_t> records;
  while (b.TakeDue(&w)) {
    ends.push_back(w.end_ns / kS);
    records.push_back(w.records);
  }
  // Windows ending 1110..1150 hold the records of [1050, 1100).
  EXPECT_EQ(ends, (std::vector<int64_t>{1110, 1120, 1130, 1140, 1150}));
  EXPECT_EQ(records, (std::vector<uint64_t>{50, 40, 30, 20, 10}));
  EXPECT_EQ(b.TakeEmptyWindows(), (std::vector<int64_t>{1160 * kS, 1170 * kS, 1180 * kS,
                                                        1190 * kS, 1200 * kS}));
  EXPECT_EQ(b.empty_windows_listed(), 5u);
  EXPECT_EQ(b.next_end_ns(), 1210 * kS);
  EXPECT_TRUE(b.TakeEmptyWindows().empty());  // once
  EXPECT_FALSE(b.TakeDue(&w));

  // A record of a passed window: late (before the open windows) or counted as missed by one.
  EXPECT_EQ(b.Add(Rec(1140)), WindowBuffer::AddResult::kLate);
  EXPECT_EQ(b.Add(Rec(1170)), WindowBuffer::AddResult::kAccepted);
  EXPECT_EQ(b.records_late_partial(), 1u);

  // Its records resume: the empties after the clock go with the next window, not again before.
  AddEachSecond(b, 1230, 1300);
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1210 * kS);
  EXPECT_TRUE(w.empty_before.empty());
  EXPECT_EQ(w.records, 1u);  // the late 1170
}

// Windows holding data before the clock are taken first; the empties after them are not handed
// out while such a window is still due (it carries nothing after it).
TEST(WindowBuffer, EmptiesPastTheClockWaitForTheWindowsHoldingData) {
  WindowBuffer b(FabricOpts());
  Window w;
  AddEachSecond(b, 1000, 1100);
  b.MoveClockTo(1180 * kS);
  EXPECT_TRUE(b.TakeEmptyWindows().empty());
  int taken = 0;
  while (b.TakeDue(&w)) ++taken;
  EXPECT_EQ(taken, 10);  // 1060..1150
  EXPECT_EQ(b.TakeEmptyWindows(), (std::vector<int64_t>{1160 * kS, 1170 * kS, 1180 * kS}));
}

// Records resuming after a gap whose first window is not due yet: the gap's empties are handed
// out at once (the windows before them are taken), not held for that window.
TEST(WindowBuffer, AGapsEmptiesGoBeforeTheWindowAfterItIsDue) {
  WindowBuffer b(FabricOpts());
  Window w;
  AddEachSecond(b, 1000, 1100);
  AddEachSecond(b, 1200, 1204);
  int taken = 0;
  while (b.TakeDue(&w)) ++taken;
  EXPECT_EQ(taken, 10);  // 1060..1150; watermark 1198.1
  EXPECT_EQ(b.TakeEmptyWindows(), (std::vector<int64_t>{1160 * kS, 1170 * kS, 1180 * kS,
                                                        1190 * kS, 1200 * kS}));
  AddEachSecond(b, 1204, 1220);
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1210 * kS);
  EXPECT_TRUE(w.empty_before.empty());
  EXPECT_EQ(w.records, 10u);
}

// A clock gone far ahead (a year of 10-s windows) lists kMaxEmptyWindowsListed empties and
// counts the rest, without walking them.
TEST(WindowBuffer, AClockFarAheadListsTheMostAndCountsTheRest) {
  WindowBuffer b(FabricOpts());
  Window w;
  AddEachSecond(b, 1000, 1100);
  const int64_t year_windows = 365 * 8640;
  b.MoveClockTo((1150 + 10 * year_windows) * kS);
  while (b.TakeDue(&w)) {
  }
  EXPECT_EQ(b.TakeEmptyWindows().size(), kMaxEmptyWindowsListed);
  EXPECT_EQ(b.empty_windows_unlisted(), static_cast<uint64_t>(year_windows) - kMaxEmptyWindowsListed);
  EXPECT_EQ(b.next_end_ns(), (1160 + 10 * year_windows) * kS);
}

// Without list_empty_windows (a lone serve, an analyser without --fabric-stage) a clock is
// ignored.
TEST(WindowBuffer, AClockIsIgnoredWithoutTheFabricStage) {
  WindowBuffer b(Opts());
  Window w;
  AddEachSecond(b, 1000, 1100);
  b.MoveClockTo(1200 * kS);
  int taken = 0;
  while (b.TakeDue(&w)) ++taken;
  EXPECT_EQ(taken, 4);  // 1060..1090 by the watermark, 1094.1
  EXPECT_TRUE(b.TakeEmptyWindows().empty());
}

// Out of order at the very start: a record of an earlier step that arrives within the reorder
// allowance after the first one is not late; the first window starts with it.
TEST(WindowBuffer, FirstWindowWaitsOutTheReorderAllowance) {
  WindowBuffer b(Opts());
  ASSERT_EQ(b.Add(Rec(1003)), WindowBuffer::AddResult::kAccepted);
  ASSERT_EQ(b.Add(Rec(1004)), WindowBuffer::AddResult::kAccepted);
  EXPECT_FALSE(b.anchored());
  ASSERT_EQ(b.Add(Rec(998)), WindowBuffer::AddResult::kAccepted);  // 6 s before, arrives third
  for (int64_t t = 1005; t < 1100; ++t) ASSERT_EQ(b.Add(Rec(t)), WindowBuffer::AddResult::kAccepted);
  EXPECT_TRUE(b.anchored());
  EXPECT_EQ(b.Add(Rec(985)), WindowBuffer::AddResult::kLate);  // now it is late
  Window w;
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.start_ns, 990 * kS);
  EXPECT_EQ(w.records, 1u + 2u + 45u);  // 998, 1003, 1004, 1005..1049
}

// A record later than the reorder allowance for one window but in time for the next ones joins
// the next ones, and the window analysed without it is not silent about it: counted.
TEST(WindowBuffer, RecordsAnAnalysedWindowMissedAreCounted) {
  WindowBuffer b(Opts());
  Window w;
  for (int64_t t = 1000; t < 1076; ++t) b.Add(Rec(t));
  ASSERT_TRUE(b.TakeDue(&w));
  ASSERT_TRUE(b.TakeDue(&w));
  ASSERT_EQ(w.end_ns, 1070 * kS);  // [1010, 1070) analysed
  EXPECT_EQ(b.records_late_partial(), 0u);
  EXPECT_EQ(b.Add(Rec(1065)), WindowBuffer::AddResult::kAccepted);  // [1010, 1070) missed it
  EXPECT_EQ(b.records_late_partial(), 1u);
  EXPECT_EQ(b.Add(Rec(1072)), WindowBuffer::AddResult::kAccepted);  // no window taken covers it
  EXPECT_EQ(b.Add(Rec(1015)), WindowBuffer::AddResult::kLate);      // counted as late instead
  EXPECT_EQ(b.records_late_partial(), 1u);
  b.Add(Rec(1090));
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1080 * kS);
  EXPECT_EQ(w.records, 56u + 2u);  // 1020..1075, 1065 and 1072 again
}

// A resumed analyser's windows before its committed end were analysed by the earlier process
// with every record the stream held: records of theirs read again are not late for them.
TEST(WindowBuffer, AResumedBufferTakesNoRecordAsMissedByCommittedWindows) {
  WindowBuffer b(Opts());
  b.ResumeAfter(1070 * kS);
  EXPECT_EQ(b.Add(Rec(1065)), WindowBuffer::AddResult::kAccepted);
  for (int64_t t = 1066; t < 1100; ++t) b.Add(Rec(t));
  EXPECT_EQ(b.records_late_partial(), 0u);
}

// A shard taken over: its records of windows up to its previous holder's committed end come
// again, and this buffer's windows over that time went without them, but the holder had them.
TEST(WindowBuffer, RecordsOfWindowsAnalysedElsewhereAreNotCountedAsMissed) {
  WindowBuffer b(Opts());
  Window w;
  for (int64_t t = 1000; t < 1076; ++t) b.Add(Rec(t));
  ASSERT_TRUE(b.TakeDue(&w));
  ASSERT_TRUE(b.TakeDue(&w));  // [1010, 1070) analysed here
  b.NoteAnalysedElsewhere(1060 * kS);
  EXPECT_EQ(b.Add(Rec(1055)), WindowBuffer::AddResult::kAccepted);  // the holder's window had it
  EXPECT_EQ(b.records_late_partial(), 0u);
  EXPECT_EQ(b.Add(Rec(1065)), WindowBuffer::AddResult::kAccepted);  // no one's window had it
  EXPECT_EQ(b.records_late_partial(), 1u);
}

TEST(WindowBuffer, LateRecordsWithinReorderCountTooLateOnesDrop) {
  WindowBuffer b(Opts());
  Window w;
  for (int64_t t = 1000; t < 1076; ++t) b.Add(Rec(t));
  ASSERT_TRUE(b.TakeDue(&w));  // first record at 1000: the first window is [1000, 1060)
  EXPECT_EQ(w.end_ns, 1060 * kS);
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1070 * kS);
  // Next window is [1020, 1080): a record at 1015 is late, one at 1065 still counts.
  EXPECT_EQ(b.Add(Rec(1015)), WindowBuffer::AddResult::kLate);
  EXPECT_EQ(b.Add(Rec(1065)), WindowBuffer::AddResult::kAccepted);
  b.Add(Rec(1090));
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1080 * kS);
  EXPECT_EQ(w.records, 56u + 1u);  // 1020..1075 and the late 1065
  EXPECT_EQ(StartsS(w).size(), 57u);
}

TEST(WindowBuffer, FlushMakesTheDataDue) {
  WindowBuffer b(Opts());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(b.Add(Rec(1000 + i)), WindowBuffer::AddResult::kAccepted);
  Window w;
  EXPECT_FALSE(b.TakeDue(&w));  // watermark 1004: nothing due
  b.Flush();
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1060 * kS);
  EXPECT_EQ(w.records, 10u);
  EXPECT_FALSE(b.TakeDue(&w));  // the next window starts after the data
}

TEST(WindowBuffer, SkipsGapsAndStartsAWholeWindowAfter) {
  WindowBuffer b(Opts());
  Window w;
  for (int64_t t = 1000; t < 1070; ++t) b.Add(Rec(t));
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1060 * kS);
  for (int64_t t = 5000; t < 5100; ++t) b.Add(Rec(t));
  std::vector<int64_t> ends;
  while (b.TakeDue(&w)) ends.push_back(w.end_ns / kS);
  // Windows ending 1070..1120 still hold the end of the first burst; then the gap is skipped and
  // the next window is a whole one after the data resumes (5060); the watermark is 5094.1.
  const std::vector<int64_t> want = {1070, 1080, 1090, 1100, 1110, 1120, 5060, 5070, 5080, 5090};
  EXPECT_EQ(ends, want);
}

// A shard of a fabric stage: after a gap in its data the windows go on on the grid with the
// first one holding data (5010: its last step holds 5000), and the windows between, which hold
// none of its records, are listed before it, each once.
TEST(WindowBuffer, AShardListsTheEmptyWindowsOfAGapAndGoesOnOnTheGrid) {
  WindowBufferOptions o = Opts();
  o.list_empty_windows = true;
  WindowBuffer b(o);
  Window w;
  for (int64_t t = 1000; t < 1070; ++t) b.Add(Rec(t));
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1060 * kS);
  EXPECT_TRUE(w.empty_before.empty());
  for (int64_t t = 1200; t < 1230; ++t) b.Add(Rec(t));
  std::vector<int64_t> ends;
  std::vector<std::vector<int64_t>> empties;
  while (b.TakeDue(&w)) {
    ends.push_back(w.end_ns / kS);
    std::vector<int64_t> e;
    for (int64_t end : w.empty_before) e.push_back(end / kS);
    empties.push_back(e);
  }
  // 1070..1120 hold the first burst's end; 1130..1200 hold nothing of this shard; 1210 holds
  // [1150, 1210), so 1200-1209; the watermark is 1224.1.
  EXPECT_EQ(ends, (std::vector<int64_t>{1070, 1080, 1090, 1100, 1110, 1120, 1210, 1220}));
  ASSERT_EQ(empties.size(), 8u);
  EXPECT_EQ(empties[6], (std::vector<int64_t>{1130, 1140, 1150, 1160, 1170, 1180, 1190, 1200}));
  for (size_t i = 0; i < empties.size(); ++i) {
    if (i != 6) {
      EXPECT_TRUE(empties[i].empty()) << i;
    }
  }
  EXPECT_EQ(b.empty_windows_listed(), 8u);
  EXPECT_EQ(b.empty_windows_unlisted(), 0u);
}

// Restarted on its committed end, a shard lists the windows after it that hold none of its
// records, and none before it (they were committed, their contributions published).
TEST(WindowBuffer, AResumedShardListsOnlyEmptyWindowsAfterItsCommittedEnd) {
  WindowBufferOptions o = Opts();
  o.list_empty_windows = true;
  WindowBuffer b(o);
  b.ResumeAfter(1100 * kS);
  for (int64_t t = 1135; t < 1160; ++t) b.Add(Rec(t));
  Window w;
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1140 * kS);  // holds 1135-1139
  std::vector<int64_t> e;
  for (int64_t end : w.empty_before) e.push_back(end / kS);
  EXPECT_EQ(e, (std::vector<int64_t>{1110, 1120, 1130}));
}

// A clock far ahead lists at most kMaxEmptyWindowsListed windows; the others are counted.
TEST(WindowBuffer, AHugeGapListsABoundedNumberOfEmptyWindows) {
  WindowBufferOptions o = Opts();
  o.list_empty_windows = true;
  WindowBuffer b(o);
  for (int64_t t = 1000; t < 1070; ++t) b.Add(Rec(t));
  Window w;
  while (b.TakeDue(&w)) {
  }
  const int64_t later = 1000 + 10 * static_cast<int64_t>(kMaxEmptyWindowsListed + 500);
  for (int64_t t = later; t < later + 70; ++t) b.Add(Rec(t));
  do {  // 1070..1120 still hold the first burst
    ASSERT_TRUE(b.TakeDue(&w));
  } while (w.empty_before.empty());
  EXPECT_EQ(w.end_ns, (later + 10) * kS);
  EXPECT_EQ(w.empty_before.size(), kMaxEmptyWindowsListed);
  EXPECT_GT(b.empty_windows_unlisted(), 0u);
  EXPECT_EQ(b.empty_windows_listed() + b.empty_windows_unlisted(),
            static_cast<uint64_t>((later - 1120) / 10));
}

// A window shares its buckets' segments: records added to a bucket after the window was taken
// are not in it, and its records stay readable after the buffer freed the bucket.
TEST(WindowBuffer, WindowsShareSegmentsWithoutCopying) {
  WindowBuffer b(Opts());
  for (int64_t t = 1000; t < 1066; ++t) b.Add(Rec(t));
  Window w;
  ASSERT_TRUE(b.TakeDue(&w));
  const int64_t bytes = b.bytes();
  EXPECT_GT(bytes, 0);
  EXPECT_EQ(b.Add(Rec(1059)), WindowBuffer::AddResult::kAccepted);  // into a shared bucket
  EXPECT_EQ(w.records, 60u);
  EXPECT_EQ(StartsS(w).size(), 60u);
  for (int64_t t = 1066; t < 1200; ++t) b.Add(Rec(t));
  Window later;
  while (b.TakeDue(&later)) {
  }
  EXPECT_EQ(StartsS(w).front(), 1000);  // bucket 100 is long freed by the buffer, not by `w`
  EXPECT_EQ(StartsS(w).size(), 60u);
}

// Memory by budget: when the records of a whole window and the steps after it do not fit, the
// oldest buckets a window already covered are evicted and later windows start later (shorter),
// and no record is refused.
TEST(WindowBuffer, BudgetShortensWindowsInsteadOfDropping) {
  WindowBufferOptions o = Opts();
  // 256-record segments of 72 bytes: room for 20 segments, i.e. 20 buckets of <= 256 records.
  o.max_bytes = 20 * 256 * static_cast<int64_t>(sizeof(BufferedRecord));
  WindowBuffer b(o);
  Window w;
  std::vector<Window> windows;
  uint64_t added = 0;
  // 200 records per 10 s step, 40 steps (400 s); windows taken as they come due.
  for (int64_t step = 0; step < 40; ++step) {
    for (int i = 0; i < 200; ++i) {
      ASSERT_EQ(b.Add(Rec(1000 + step * 10 + i % 10)), WindowBuffer::AddResult::kAccepted)
          << "step " << step;
      ++added;
    }
    while (b.TakeDue(&w)) {
      w.slices.clear();  // analysed: its segments are let go
      windows.push_back(std::move(w));
    }
    EXPECT_LE(b.bytes(), o.max_bytes);
  }
  // 6 buckets per window + 1 filling + the one being added fit in 20: no shortening needed yet.
  for (const Window& x : windows) EXPECT_FALSE(x.shortened());
  EXPECT_EQ(b.records_given_up(), 0u);

  // Now 600 records per step (1,024 records in 3 segments): a window of 6 steps no longer fits
  // with the steps after it, so windows get shorter. The window thread looks for due windows
  // after every batch; here after every record.
  WindowBuffer c(o);
  windows.clear();
  for (int64_t step = 0; step < 40; ++step) {
    for (int i = 0; i < 600; ++i) {
      ASSERT_EQ(c.Add(Rec(1000 + step * 10 + i % 10)), WindowBuffer::AddResult::kAccepted)
          << "step " << step << " record " << i;
      while (c.TakeDue(&w)) {
        w.slices.clear();  // analysed: its segments are let go
        windows.push_back(std::move(w));
      }
      EXPECT_LE(c.bytes(), o.max_bytes + o.max_bytes / 8);
    }
  }
  ASSERT_GT(windows.size(), 10u);
  size_t shortened = 0;
  // The first window ends early ([990, 1050): the budget filled before 1060); every later one
  // starts later than a whole window would.
  EXPECT_EQ(windows[0].end_ns, 1050 * kS);
  for (size_t i = 0; i < windows.size(); ++i) {
    const Window& x = windows[i];
    shortened += x.shortened() ? 1 : 0;
    EXPECT_EQ(x.end_ns - x.nominal_start_ns, 60 * kS);
    EXPECT_GE(x.end_ns - x.start_ns, 10 * kS);  // at least one step
    if (i > 0) {
      EXPECT_TRUE(x.shortened()) << x.start_ns / kS << "-" << x.end_ns / kS;
    }
  }
  EXPECT_GT(shortened, 0u);
  EXPECT_EQ(c.windows_shortened(), shortened);
  EXPECT_GT(c.buckets_evicted(), 0u);
  EXPECT_EQ(c.records_given_up(), 0u);  // every record was in some window
}

// When the budget cannot hold even the steps not yet analysed, records are refused (kFull) and
// counted by the caller; nothing is dropped without saying so.
TEST(WindowBuffer, BudgetBelowOneStepRefusesAndSaysSo) {
  WindowBufferOptions o = Opts();
  o.max_bytes = 2 * 256 * static_cast<int64_t>(sizeof(BufferedRecord));
  WindowBuffer b(o);
  size_t accepted = 0, full = 0;
  for (int i = 0; i < 1000; ++i) {
    switch (b.Add(Rec(1000 + i % 10))) {
      case WindowBuffer::AddResult::kAccepted: ++accepted; break;
      case WindowBuffer::AddResult::kFull: ++full; break;
      case WindowBuffer::AddResult::kLate: break;
    }
  }
  EXPECT_EQ(accepted, 512u);
  EXPECT_EQ(full, 488u);
  EXPECT_LE(b.bytes(), o.max_bytes);
}

// The analysis bound: a window holding more records than its analysis may starts later; buckets
// no window covered are given up and counted.
TEST(WindowBuffer, WindowRecordBoundStartsTheWindowLater) {
  WindowBufferOptions o = Opts();
  o.max_window_records = 250;
  WindowBuffer b(o);
  for (int64_t t = 1000; t < 1066; ++t) {
    for (int i = 0; i < 10; ++i) b.Add(Rec(t));  // 100 records per 10 s step
  }
  Window w;
  ASSERT_TRUE(b.TakeDue(&w));  // [1000, 1060): 600 records, only the last 2 steps fit
  EXPECT_EQ(w.records, 200u);
  EXPECT_EQ(w.start_ns, 1040 * kS);
  EXPECT_TRUE(w.shortened());
  EXPECT_EQ(b.records_given_up(), 400u);  // 1000..1039: never in a window
  EXPECT_EQ(b.Add(Rec(1035)), WindowBuffer::AddResult::kFull);  // its bucket was given up
}

// Analysis behind by more than the allowed lag: the newest due window is taken and the others
// are skipped; records no taken window covered are counted. Within the lag, oldest first.
TEST(WindowBuffer, FarBehindSkipsToTheNewestDueWindow) {
  WindowBufferOptions o = Opts();
  o.window_ns = 20 * kS;
  WindowBuffer b(o);
  for (int64_t t = 1000; t < 1100; ++t) b.Add(Rec(t));
  Window w;
  // Due: windows ending 1020 .. 1090 (watermark 1094.1): 7 behind the first, more than 2.
  ASSERT_TRUE(b.TakeDue(&w, /*max_lag_windows=*/2));
  EXPECT_EQ(w.end_ns, 1090 * kS);
  EXPECT_EQ(w.start_ns, 1070 * kS);
  EXPECT_EQ(b.windows_skipped(), 7u);
  EXPECT_EQ(b.records_skipped(), 70u);  // 1000..1069
  EXPECT_FALSE(b.TakeDue(&w, 2));

  WindowBuffer c(o);
  for (int64_t t = 1000; t < 1046; ++t) c.Add(Rec(t));
  // Due: 1020, 1030, 1040 (watermark 1040.1): within a lag of 2, oldest first.
  std::vector<int64_t> ends;
  while (c.TakeDue(&w, 2)) ends.push_back(w.end_ns / kS);
  EXPECT_EQ(ends, (std::vector<int64_t>{1020, 1030, 1040}));
  EXPECT_EQ(c.windows_skipped(), 0u);
  // A flush of a short burst gives one window, not one per step of the burst.
  WindowBuffer d(Opts());
  for (int64_t t = 1000; t < 1030; ++t) d.Add(Rec(t));
  d.Flush();
  ends.clear();
  while (d.TakeDue(&w, 5)) ends.push_back(w.end_ns / kS);
  EXPECT_EQ(ends, (std::vector<int64_t>{1060}));
}

}  // namespace
}  // namespace prism::service

namespace prism::service {
namespace {

// The windows an uninterrupted buffer takes after window `committed_end`, against those a buffer
// resumed there takes from the records only later windows hold: the same windows, same records.
TEST(WindowBuffer, ResumedAfterACommittedWindowTakesTheSameLaterWindows) {
  std::vector<FlowRecord> records;
  for (int64_t t = 1003; t < 1200; t += 2) records.push_back(Rec(t));
  const int64_t committed_end = 1100 * kS;
  auto take_all = [](WindowBuffer& b, const std::vector<FlowRecord>& rs, int64_t after) {
    std::vector<std::pair<int64_t, std::vector<int64_t>>> out;
    Window w;
    for (const FlowRecord& r : rs) {
      EXPECT_EQ(b.Add(r), WindowBuffer::AddResult::kAccepted);
      while (b.TakeDue(&w)) {
        if (w.end_ns > after) out.push_back({w.end_ns / kS, StartsS(w)});
      }
    }
    b.Flush();
    while (b.TakeDue(&w)) {
      if (w.end_ns > after) out.push_back({w.end_ns / kS, StartsS(w)});
    }
    return out;
  };
  WindowBuffer whole(Opts());
  const auto expected = take_all(whole, records, committed_end);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(expected.front().first, 1110);

  std::vector<FlowRecord> later;  // what a restart reads again and keeps
  for (const FlowRecord& r : records) {
    if (r.start_ns >= committed_end + 10 * kS - 60 * kS) later.push_back(r);
  }
  WindowBuffer resumed(Opts());
  resumed.ResumeAfter(committed_end);
  EXPECT_EQ(take_all(resumed, later, INT64_MIN), expected);
}

TEST(WindowBuffer, ResumedAfterTheLastWindowAFlushTakesNothingMore) {
  // The earlier process flushed at the end of its data: its last window ended after the data.
  WindowBuffer resumed(Opts());
  resumed.ResumeAfter(1200 * kS);
  for (int64_t t = 1150; t < 1195; t += 5) {
    ASSERT_EQ(resumed.Add(Rec(t)), WindowBuffer::AddResult::kAccepted);
  }
  resumed.Flush();
  Window w;
  EXPECT_FALSE(resumed.TakeDue(&w));
  // New data: the windows go on.
  ASSERT_EQ(resumed.Add(Rec(1203)), WindowBuffer::AddResult::kAccepted);
  resumed.Flush();
  ASSERT_TRUE(resumed.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1210 * kS);
  EXPECT_EQ(StartsS(w).front(), 1150);
}

}  // namespace
}  // namespace prism::service
