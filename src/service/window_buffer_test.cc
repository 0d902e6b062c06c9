#include "service/window_buffer.h"

#include <gtest/gtest.h>

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
  o.max_records = 1000;
  return o;
}

TEST(WindowBuffer, FirstWindowIsWholeAndSlidesByStep) {
  WindowBuffer b(Opts());
  Window w;
  for (int64_t t = 1003; t < 1100; ++t) ASSERT_EQ(b.Add(Rec(t)), WindowBuffer::AddResult::kAccepted);
  // First record at 1003 s: the first window is [1000, 1060).
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.start_ns, 1000 * kS);
  EXPECT_EQ(w.end_ns, 1060 * kS);
  EXPECT_EQ(w.records.size(), 57u);
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.start_ns, 1010 * kS);
  EXPECT_EQ(w.end_ns, 1070 * kS);
  EXPECT_EQ(w.records.size(), 60u);
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1080 * kS);
  // Watermark = 1099.1 - 5 = 1094.1: the window ending 1090 is due, 1100 is not.
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1090 * kS);
  EXPECT_FALSE(b.TakeDue(&w));
  // Buckets before the next window's start (1040) are freed.
  EXPECT_EQ(b.size(), static_cast<size_t>(1100 - 1040));
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
  EXPECT_EQ(w.records.size(), 56u + 1u);  // 1020..1075 and the late 1065
}

TEST(WindowBuffer, BoundedAndFlushable) {
  WindowBufferOptions o = Opts();
  o.max_records = 10;
  WindowBuffer b(o);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(b.Add(Rec(1000 + i)), WindowBuffer::AddResult::kAccepted);
  EXPECT_EQ(b.Add(Rec(1011)), WindowBuffer::AddResult::kFull);
  Window w;
  EXPECT_FALSE(b.TakeDue(&w));  // watermark 1004: nothing due
  b.Flush();
  ASSERT_TRUE(b.TakeDue(&w));
  EXPECT_EQ(w.end_ns, 1060 * kS);
  EXPECT_EQ(w.records.size(), 10u);
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

}  // namespace
}  // namespace prism::service
