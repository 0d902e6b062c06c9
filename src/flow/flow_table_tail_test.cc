#include "flow/flow_table_tail.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "flow/flow_table.h"
#include "flow/flow_table_testing.h"

namespace prism::flow {
namespace {

// Records over a few hundred endpoints (IPv4 and IPv6), some first seen late, with points
// (kNoPoint among them), QPs and sampling rates.
std::vector<FlowRecord> Records(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  auto addr = [&](size_t i) {
    const uint32_t k = static_cast<uint32_t>(rng() % std::min<size_t>(400, 20 + i / 50));
    return *IpAddr::Parse(k % 7 == 0 ? fmt::format("fd00::{:x}", k)
                                     : fmt::format("10.0.{}.{}", k / 256, k % 256));
  };
  std::vector<FlowRecord> out(n);
  for (size_t i = 0; i < n; ++i) {
    FlowRecord& r = out[i];
    r.src = addr(i);
    r.dst = addr(i);
    r.start_ns = static_cast<int64_t>(rng() % 1'000'000'000);
    r.end_ns = r.start_ns + static_cast<int64_t>(rng() % 5'000'000);
    r.bytes = rng() % 100'000;
    r.qp = rng();
    r.point = rng() % 9 == 0 ? kNoPoint : static_cast<PointId>(rng() % 6);
    r.sampling_rate = rng() % 3;
  }
  return out;
}

// A tail's point ids are its own: this test's tails have p at the table's p + 10.
constexpr PointId kTailPointShift = 10;

void FeedAsBatch(std::span<const FlowRecord> records, FlowTableTail* tail) {
  RecordBatch batch;
  batch.Reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    PutRow(&batch, i, records[i]);
    if (records[i].point != kNoPoint) batch.point[i] = records[i].point + kTailPointShift;
  }
  batch.size = records.size();
  tail->OnBatch(&batch);
}

void FeedOneByOne(std::span<const FlowRecord> records, FlowTableTail* tail) {
  for (FlowRecord r : records) {
    if (r.point != kNoPoint) r.point += kTailPointShift;
    tail->OnRecord(r);
  }
}

struct Split {
  std::string name;
  size_t before;                    // rows the table holds before the tails are made
  size_t own, own_room;             // rows it takes while they fill, and its room for them
  std::vector<size_t> rows, rooms;  // each tail's
  friend void PrintTo(const Split& s, std::ostream* os) { *os << s.name; }
};

class FlowTableTails : public testing::TestWithParam<Split> {};

// The table with its tails appended is the table that took every record one by one: rows,
// endpoint ids (first appearance over all rows), points mapped, bounds. The gaps cover each way
// the rows move down: long gaps in chunks (one or several), short ones row by row, none.
TEST_P(FlowTableTails, AppendedGiveTheTableOfOneByOne) {
  const Split& s = GetParam();
  size_t total = s.before + s.own;
  for (size_t r : s.rows) total += r;
  const std::vector<FlowRecord> records = Records(total, 7);
  FlowTable want;
  for (const FlowRecord& r : records) want.OnRecord(r);

  FlowTable got;
  size_t next = 0;
  for (; next < s.before; ++next) got.OnRecord(records[next]);
  std::vector<FlowTableTail> tails = got.MakeTails(s.own_room, s.rooms);
  ASSERT_EQ(tails.size(), s.rows.size());
  const std::span<const FlowRecord> all(records);
  size_t at = s.before + s.own;
  for (size_t k = 0; k < tails.size(); ++k) {  // the tails first, as another thread may
    const auto rows = all.subspan(at, s.rows[k]);
    k % 2 == 0 ? FeedAsBatch(rows, &tails[k]) : FeedOneByOne(rows, &tails[k]);
    EXPECT_EQ(tails[k].size(), s.rows[k]);
    at += s.rows[k];
  }
  for (; next < s.before + s.own; ++next) got.OnRecord(records[next]);
  std::vector<PointId> point_of(kTailPointShift + 6, kNoPoint);
  for (PointId p = 0; p < 6; ++p) point_of[p + kTailPointShift] = p;
  for (FlowTableTail& tail : tails) got.AppendTail(std::move(tail), point_of, /*threads=*/2);
  ExpectSameTable(got, want);

  got.OnRecord(records[0]);  // after the last tail the table takes rows without bound
  EXPECT_EQ(got.size(), total + 1);
}

// The table holds sampling rates only once a record is sampled, and the high halves of bytes and
// durations only once a record holds 4 GiB or lasts 4.3 s (flow/lazy_column.h); a tail holds its
// own. One such record, in a tail or among the table's rows taken while the tails fill, gives the
// table that took every record one by one.
TEST(FlowTableTailsLazyColumns, OneSampledLargeRecordAnywhereGivesTheTableOfOneByOne) {
  constexpr uint64_t kLarge = (uint64_t{5} << 32) + 3;
  const size_t before = 10, own = 300, tail_rows = 400;
  for (const size_t sampled_row : {size_t{5}, before + 100, before + own + 250, size_t{2'000}}) {
    std::vector<FlowRecord> records = Records(before + own + 2 * tail_rows, 11);
    for (FlowRecord& r : records) r.sampling_rate = r.sampling_rate == 2 ? 0 : r.sampling_rate;
    if (sampled_row < records.size()) {
      records[sampled_row].sampling_rate = 32;
      records[sampled_row].bytes = kLarge;
      records[sampled_row].end_ns = records[sampled_row].start_ns + kLarge;
    }
    FlowTable want;
    for (const FlowRecord& r : records) want.OnRecord(r);

    FlowTable got;
    for (size_t i = 0; i < before; ++i) got.OnRecord(records[i]);
    const std::vector<size_t> rooms = {tail_rows, tail_rows};
    std::vector<FlowTableTail> tails = got.MakeTails(own, rooms);
    const std::span<const FlowRecord> all(records);
    FeedAsBatch(all.subspan(before + own, tail_rows), &tails[0]);
    FeedOneByOne(all.subspan(before + own + tail_rows, tail_rows), &tails[1]);
    for (size_t i = before; i < before + own; ++i) got.OnRecord(records[i]);
    std::vector<PointId> point_of(kTailPointShift + 6, kNoPoint);
    for (PointId p = 0; p < 6; ++p) point_of[p + kTailPointShift] = p;
    for (FlowTableTail& tail : tails) got.AppendTail(std::move(tail), point_of);
    SCOPED_TRACE(sampled_row);
    EXPECT_EQ(got.sampling_rate().empty(), sampled_row >= records.size());
    EXPECT_EQ(got.bytes_high().empty(), sampled_row >= records.size());
    EXPECT_EQ(got.duration_high().empty(), sampled_row >= records.size());
    ExpectSameTable(got, want);
    for (size_t r = 0; r < records.size(); ++r) {
      ASSERT_EQ(got.SamplingRate(r), r == sampled_row ? 32u : 1u) << r;
      ASSERT_EQ(got.Bytes(r), records[r].bytes) << r;
      ASSERT_EQ(got.EndNs(r), records[r].end_ns) << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Gaps, FlowTableTails,
    testing::Values(Split{"ShortGapsRowByRow", 10, 300, 350, {400, 250}, {410, 900}},
                    Split{"NoGap", 0, 500, 500, {600}, {600}},
                    Split{"EmptyTail", 5, 50, 80, {0, 70}, {10, 70}},
                    Split{"GapLongerThanTheTail", 0, 1000, 80'000, {70'000}, {70'000}},
                    Split{"LongGapInChunks", 3, 100'000, 170'000, {200'000, 90'000},
                          {230'000, 100'000}}),
    [](const testing::TestParamInfo<Split>& info) { return info.param.name; });

TEST(FlowTableTailsDeathTest, RowsBeyondTheirRoomStopTheProcess) {
  const std::vector<FlowRecord> records = Records(10, 3);
  EXPECT_DEATH(
      {
        FlowTable table;
        const std::vector<size_t> rooms = {4};
        std::vector<FlowTableTail> tails = table.MakeTails(2, rooms);
        for (const FlowRecord& r : records) table.OnRecord(r);  // its own room is 2 rows
      },
      "PRISM_CHECK failed");
  EXPECT_DEATH(
      {
        FlowTable table;
        const std::vector<size_t> rooms = {4};
        std::vector<FlowTableTail> tails = table.MakeTails(2, rooms);
        FeedOneByOne(records, &tails[0]);  // room for 4
      },
      "PRISM_CHECK failed");
}

}  // namespace
}  // namespace prism::flow
