#include "flow/flow_table.h"
#include "flow/flow_table_testing.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

namespace prism::flow {
namespace {

FlowRecord Rec(const char* src, const char* dst, int64_t start, uint64_t bytes) {
  FlowRecord r;
  r.src = *IpAddr::Parse(src);
  r.dst = *IpAddr::Parse(dst);
  r.start_ns = start;
  r.end_ns = start + 10;
  r.bytes = bytes;
  return r;
}

TEST(FlowTable, InternsEndpointsAndSortsAllColumnsTogether) {
  FlowTable t;
  t.OnRecord(Rec("10.0.0.2", "10.0.0.1", 300, 3));
  t.OnRecord(Rec("10.0.0.1", "10.0.0.2", 100, 1));
  t.OnRecord(Rec("fd00::1", "10.0.0.1", 200, 2));
  EXPECT_EQ(t.endpoints().size(), 3u);
  t.SortByStart();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.start_ns()[0], 100);
  EXPECT_EQ(t.Bytes(0), 1u);
  EXPECT_EQ(t.Bytes(1), 2u);
  EXPECT_EQ(t.endpoints().Addr(t.src()[1]).ToString(), "fd00::1");
  EXPECT_EQ(t.Bytes(2), 3u);
  EXPECT_EQ(t.min_start_ns(), 100);
  EXPECT_EQ(t.max_end_ns(), 310);
}

// The latest start, whatever the records claim as their end: read from the last row once the rows
// are sorted by start, found among all rows before, and again after an append unsorts them.
TEST(FlowTable, LatestStartIsTheLargestStartSortedOrNot) {
  FlowTable t;
  EXPECT_EQ(t.LatestStartNs(), INT64_MIN);
  t.OnRecord(Rec("10.0.0.1", "10.0.0.2", 500, 1));
  FlowRecord long_record = Rec("10.0.0.2", "10.0.0.1", 100, 2);
  long_record.end_ns = 1'000'000;  // ends last, starts first
  t.OnRecord(long_record);
  t.OnRecord(Rec("10.0.0.1", "10.0.0.3", 300, 3));
  ASSERT_FALSE(t.sorted_by_start());
  EXPECT_EQ(t.LatestStartNs(), 500);
  t.SortByStart();
  ASSERT_TRUE(t.sorted_by_start());
  EXPECT_EQ(t.LatestStartNs(), 500);
  t.OnRecord(Rec("10.0.0.3", "10.0.0.1", 200, 4));  // appended after a later start
  EXPECT_FALSE(t.sorted_by_start());
  EXPECT_EQ(t.LatestStartNs(), 500);
}

TEST(FlowTable, EstimatedBytesScaleSampledRecordsAndSurviveRelease) {
  FlowTable unsampled;
  unsampled.OnRecord(Rec("10.0.0.1", "10.0.0.2", 100, 5000));
  unsampled.ReleaseTransferColumns();
  EXPECT_TRUE(unsampled.sampling_rate().empty());  // freed: nothing needs it
  EXPECT_EQ(unsampled.EstimatedBytes(0), 5000u);

  FlowTable sampled;
  FlowRecord r = Rec("10.0.0.1", "10.0.0.2", 100, 5000);
  r.sampling_rate = 1000;
  sampled.OnRecord(r);
  sampled.OnRecord(Rec("10.0.0.1", "10.0.0.3", 200, 7000));
  r.sampling_rate = 0;  // unknown: counted once
  sampled.OnRecord(r);
  EXPECT_EQ(sampled.EstimatedBytes(0), 5'000'000u);
  sampled.ReleaseTransferColumns();
  EXPECT_EQ(sampled.EstimatedBytes(0), 5'000'000u);  // kept for the diagnosis's rates
  EXPECT_EQ(sampled.EstimatedBytes(1), 7000u);
  EXPECT_EQ(sampled.EstimatedBytes(2), 5000u);
  EXPECT_EQ(sampled.Bytes(0), 5000u);
}

// Unsampled records hold no rate; the first sampled one fills in 1 for the records before it,
// and from then on the rates follow their records through the sort and the cuts.
TEST(FlowTable, SamplingRatesAreHeldOnceARecordIsSampled) {
  FlowTable t;
  FlowRecord r = Rec("10.0.0.1", "10.0.0.2", 500, 5000);
  t.OnRecord(r);  // a rate of 0: unknown, read as 1
  r.sampling_rate = 1;
  r.start_ns = 400;
  t.OnRecord(r);
  EXPECT_TRUE(t.sampling_rate().empty());
  EXPECT_EQ(t.SamplingRate(1), 1u);

  RecordBatch batch;
  batch.Reserve(2);
  r.start_ns = 300;
  r.sampling_rate = 0;
  PutRow(&batch, 0, r);
  r.start_ns = 200;
  r.sampling_rate = 64;
  PutRow(&batch, 1, r);
  batch.size = 2;
  t.OnBatch(&batch);
  EXPECT_EQ(std::vector<uint32_t>(t.sampling_rate().begin(), t.sampling_rate().end()),
            (std::vector<uint32_t>{1, 1, 1, 64}));

  t.SortByStart();  // starts 200, 300, 400, 500
  EXPECT_EQ(std::vector<uint32_t>(t.sampling_rate().begin(), t.sampling_rate().end()),
            (std::vector<uint32_t>{64, 1, 1, 1}));
  EXPECT_EQ(t.EstimatedBytes(0), 64u * 5000);
  const FlowTable first = t.CopyRows(0, 2);
  EXPECT_EQ(first.SamplingRate(0), 64u);
  EXPECT_EQ(first.SamplingRate(1), 1u);
  t.KeepRows(1, 4);
  EXPECT_EQ(t.sampling_rate().size(), 3u);
  EXPECT_EQ(t.EstimatedBytes(0), 5000u);

  FlowTable unsampled;
  unsampled.OnRecord(Rec("10.0.0.1", "10.0.0.2", 500, 5000));
  unsampled.OnRecord(Rec("10.0.0.1", "10.0.0.3", 100, 5000));
  unsampled.SortByStart();
  unsampled.KeepRows(0, 1);
  EXPECT_TRUE(unsampled.sampling_rate().empty());
  EXPECT_TRUE(unsampled.CopyRows(0, 1).sampling_rate().empty());
}

// Bytes are held as two 32-bit halves, the high one only once a record holds 4 GiB or more:
// every count reads back whole, through the sort and the cuts.
TEST(FlowTable, BytesOf4GiBAndMoreReadBackWhole) {
  constexpr uint64_t kLarge = (uint64_t{6} << 30) + 7, kLargest = UINT64_MAX;
  FlowTable t;
  t.OnRecord(Rec("10.0.0.1", "10.0.0.2", 500, 5000));
  t.OnRecord(Rec("10.0.0.1", "10.0.0.2", 400, uint64_t{UINT32_MAX}));
  EXPECT_TRUE(t.bytes_high().empty());
  EXPECT_EQ(t.Bytes(1), uint64_t{UINT32_MAX});

  RecordBatch batch;
  batch.Reserve(2);
  PutRow(&batch, 0, Rec("10.0.0.1", "10.0.0.3", 300, kLarge));
  FlowRecord sampled = Rec("10.0.0.1", "10.0.0.3", 200, kLargest);
  sampled.sampling_rate = 1;
  PutRow(&batch, 1, sampled);
  batch.size = 2;
  t.OnBatch(&batch);
  EXPECT_EQ(t.bytes_high().size(), 4u);
  EXPECT_EQ(t.Bytes(0), 5000u);
  EXPECT_EQ(t.Bytes(2), kLarge);
  EXPECT_EQ(t.Bytes(3), kLargest);

  t.SortByStart();  // starts 200, 300, 400, 500
  EXPECT_EQ(t.Bytes(0), kLargest);
  EXPECT_EQ(t.Bytes(1), kLarge);
  EXPECT_EQ(t.EstimatedBytes(1), kLarge);
  EXPECT_EQ(t.Bytes(2), uint64_t{UINT32_MAX});
  EXPECT_EQ(t.CopyRows(1, 3).Bytes(0), kLarge);
  t.KeepRows(1, 4);
  EXPECT_EQ(t.Bytes(0), kLarge);
  EXPECT_EQ(t.Bytes(2), 5000u);
}

// Ends are held as durations in two 32-bit halves, the high one only once a record lasts 4.3 s
// or more or ends before it starts: every end reads back exactly, and orders equal starts.
TEST(FlowTable, EndsOfLongAndBackwardRecordsReadBackExactly) {
  constexpr int64_t kSecond = 1'000'000'000;
  FlowTable t;
  FlowRecord r = Rec("10.0.0.1", "10.0.0.2", 5 * kSecond, 5000);
  r.end_ns = r.start_ns + 4 * kSecond;  // below 2^32 ns
  t.OnRecord(r);
  EXPECT_TRUE(t.duration_high().empty());
  EXPECT_EQ(t.EndNs(0), 9 * kSecond);

  RecordBatch batch;
  batch.Reserve(3);
  r.end_ns = r.start_ns + 60 * kSecond;  // a minute: the high halves are held from here
  PutRow(&batch, 0, r);
  r.end_ns = r.start_ns - 7;  // ends before it starts
  PutRow(&batch, 1, r);
  r.start_ns = -1000 * kSecond;
  r.end_ns = INT64_MAX;  // a duration beyond INT64_MAX
  PutRow(&batch, 2, r);
  batch.size = 3;
  t.OnBatch(&batch);
  EXPECT_EQ(t.duration_high().size(), 4u);
  EXPECT_EQ(t.EndNs(0), 9 * kSecond);
  EXPECT_EQ(t.EndNs(1), 65 * kSecond);
  EXPECT_EQ(t.EndNs(2), 5 * kSecond - 7);
  EXPECT_EQ(t.EndNs(3), INT64_MAX);
  EXPECT_EQ(t.max_end_ns(), INT64_MAX);

  t.SortByStart();  // (start, end): -1000 s first, then the start of 5 s by end
  EXPECT_EQ(t.EndNs(0), INT64_MAX);
  EXPECT_EQ(t.EndNs(1), 5 * kSecond - 7);
  EXPECT_EQ(t.EndNs(2), 9 * kSecond);
  EXPECT_EQ(t.EndNs(3), 65 * kSecond);
  const FlowTable cut = t.CopyRows(2, 4);
  EXPECT_EQ(cut.EndNs(1), 65 * kSecond);
  EXPECT_EQ(cut.max_end_ns(), 65 * kSecond);
  t.KeepRows(1, 4);
  EXPECT_EQ(t.EndNs(2), 65 * kSecond);
  EXPECT_EQ(t.max_end_ns(), 65 * kSecond);
}

// The order SortByStart promises: (start, end, src, dst) by the table's endpoint ids, ties of all
// four in loading order — computed here the slow, obvious way.
struct Row {
  int64_t start, end;
  EndpointId src, dst;
  uint64_t bytes;
  uint32_t qp, sampling;
  PointId point;
};

std::vector<Row> Rows(const FlowTable& t) {
  std::vector<Row> rows;
  for (size_t i = 0; i < t.size(); ++i) {
    rows.push_back({t.start_ns()[i], t.EndNs(i), t.src()[i], t.dst()[i], t.Bytes(i),
                    t.qp()[i], t.SamplingRate(i), t.point()[i]});
  }
  return rows;
}

std::vector<Row> ReferenceOrder(std::vector<Row> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(a.start, a.end, a.src, a.dst) < std::tie(b.start, b.end, b.src, b.dst);
  });
  return rows;
}

void ExpectRows(const std::vector<Row>& got, const std::vector<Row>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // bytes is unique per loaded row: it names the row, so ties are checked too.
    ASSERT_EQ(got[i].bytes, want[i].bytes) << "row " << i;
    EXPECT_EQ(got[i].start, want[i].start);
    EXPECT_EQ(got[i].end, want[i].end);
    EXPECT_EQ(got[i].src, want[i].src);
    EXPECT_EQ(got[i].dst, want[i].dst);
    EXPECT_EQ(got[i].qp, want[i].qp);
    EXPECT_EQ(got[i].sampling, want[i].sampling);
    EXPECT_EQ(got[i].point, want[i].point);
  }
}

// `n` records among `endpoints` addresses, starts in [0, start_span) (so many ties when small),
// ends start + [0, end_span); every column a function of the row (bytes = row number).
FlowTable Random(size_t n, int endpoints, int64_t start_span, int64_t end_span, uint64_t seed,
                 int64_t start_offset = 1'700'000'000'000'000'000) {
  std::mt19937_64 rng(seed);
  FlowTable t;
  for (size_t i = 0; i < n; ++i) {
    FlowRecord r;
    r.src = IpAddr::FromV4(0x0A000000u + static_cast<uint32_t>(rng() % endpoints));
    r.dst = IpAddr::FromV4(0x0A000000u + static_cast<uint32_t>(rng() % endpoints));
    r.start_ns = start_offset + static_cast<int64_t>(rng() % static_cast<uint64_t>(start_span));
    r.end_ns = r.start_ns + static_cast<int64_t>(rng() % static_cast<uint64_t>(end_span));
    r.bytes = i;
    r.qp = static_cast<uint32_t>(i * 7);
    r.sampling_rate = static_cast<uint32_t>(i % 5 + 1);
    r.point = static_cast<PointId>(i % 3);
    t.OnRecord(r);
  }
  return t;
}

TEST(FlowTableSort, ShuffledInputWithManyTies) {
  for (uint64_t seed : {1, 2, 3}) {
    FlowTable t = Random(5'000, 20, 50, 4, seed);
    const std::vector<Row> want = ReferenceOrder(Rows(t));
    t.SortByStart();
    ExpectRows(Rows(t), want);
  }
}

// Starts already in order but equal starts not in (end, src, dst) order: the table looks sorted
// by start alone, yet its ties must still be ordered.
TEST(FlowTableSort, SortedStartsWithShuffledTies) {
  FlowTable t;
  std::mt19937_64 rng(11);
  uint64_t row = 0;
  for (int64_t start = 1000; start < 1100; ++start) {
    for (int k = 0; k < 6; ++k) {
      FlowRecord r;
      r.src = IpAddr::FromV4(0x0A000000u + static_cast<uint32_t>(rng() % 8));
      r.dst = IpAddr::FromV4(0x0A000000u + static_cast<uint32_t>(rng() % 8));
      r.start_ns = start;
      r.end_ns = start + static_cast<int64_t>(rng() % 3);
      r.bytes = row++;
      t.OnRecord(r);
    }
  }
  ASSERT_TRUE(std::is_sorted(t.start_ns().begin(), t.start_ns().end()));
  const std::vector<Row> want = ReferenceOrder(Rows(t));
  size_t moved = 0;  // the input is not already in the promised order
  for (size_t i = 0; i < want.size(); ++i) moved += want[i].bytes != i;
  ASSERT_GT(moved, 100u);
  t.SortByStart();
  ExpectRows(Rows(t), want);
}

// A time span too long to pack beside the row number in 64 bits: the stable comparison sort.
TEST(FlowTableSort, StableFallbackForLongSpans) {
  FlowTable t = Random(3'000, 10, int64_t{1} << 60, 3, 5, 0);
  t.OnRecord(Rec("10.0.0.1", "10.0.0.2", (int64_t{1} << 62) - 1, 3'000));
  t.OnRecord(Rec("10.0.0.1", "10.0.0.2", 0, 3'001));
  t.OnRecord(Rec("10.0.0.1", "10.0.0.2", 0, 3'002));  // a tie with the row before: stays after it
  const std::vector<Row> want = ReferenceOrder(Rows(t));
  t.SortByStart();
  ExpectRows(Rows(t), want);
}

// Two threads move the columns in parallel (from 65,536 rows on): the same table as one thread.
TEST(FlowTableSort, TwoThreadsGiveTheSameTable) {
  FlowTable one = Random(200'000, 500, 2'000'000, 1'000, 9);
  FlowTable two = Random(200'000, 500, 2'000'000, 1'000, 9);
  const std::vector<Row> want = ReferenceOrder(Rows(one));
  one.SortByStart(1);
  two.SortByStart(2);
  ExpectRows(Rows(one), want);
  ExpectRows(Rows(two), want);
}

// Starts over a minute, most rows in a few 20 us bursts (so some time buckets hold tens of
// thousands of rows and most a handful), with ties: the order is the reference one at 1 and 2
// threads.
TEST(FlowTableSort, BurstyStartsInCrowdedAndSparseBuckets) {
  auto make = [] {
    std::mt19937_64 rng(31);
    FlowTable t;
    for (uint64_t i = 0; i < 150'000; ++i) {
      FlowRecord r;
      r.src = IpAddr::FromV4(0x0A000000u + static_cast<uint32_t>(rng() % 40));
      r.dst = IpAddr::FromV4(0x0A000000u + static_cast<uint32_t>(rng() % 40));
      const int64_t burst = static_cast<int64_t>(rng() % 4) * 15'000'000'000;
      r.start_ns = 1'700'000'000'000'000'000 +
                   (rng() % 10 < 8 ? burst + static_cast<int64_t>(rng() % 20'000)
                                   : static_cast<int64_t>(rng() % 60'000'000'000));
      r.end_ns = r.start_ns + static_cast<int64_t>(rng() % 3);
      r.bytes = i;
      r.qp = static_cast<uint32_t>(i * 3);
      r.point = static_cast<PointId>(i % 4);
      t.OnRecord(r);
    }
    return t;
  };
  FlowTable one = make(), two = make();
  const std::vector<Row> want = ReferenceOrder(Rows(one));
  one.SortByStart(1);
  two.SortByStart(2);
  ExpectRows(Rows(one), want);
  ExpectRows(Rows(two), want);
}

// What collectors deliver: each exporter's records nearly in start order (jittered by up to a
// millisecond), the exporters' streams interleaved.
TEST(FlowTableSort, InterleavedNearlySortedStreams) {
  std::mt19937_64 rng(41);
  FlowTable t;
  constexpr int kStreams = 7;
  int64_t clock[kStreams] = {};
  for (uint64_t i = 0; i < 120'000; ++i) {
    const int s = static_cast<int>(rng() % kStreams);
    clock[s] += static_cast<int64_t>(rng() % 3'000'000);
    FlowRecord r;
    r.src = IpAddr::FromV4(0x0A000000u + static_cast<uint32_t>(s));
    r.dst = IpAddr::FromV4(0x0A000100u + static_cast<uint32_t>(rng() % 16));
    r.start_ns = 1'000'000'000 + clock[s] - static_cast<int64_t>(rng() % 1'000'000);
    r.end_ns = r.start_ns + 5'000;
    r.bytes = i;
    r.point = static_cast<PointId>(s);
    t.OnRecord(r);
  }
  ASSERT_FALSE(std::is_sorted(t.start_ns().begin(), t.start_ns().end()));
  const std::vector<Row> want = ReferenceOrder(Rows(t));
  t.SortByStart(2);
  ExpectRows(Rows(t), want);
}

// A window cut from a sorted table re-interns its endpoints in row order, so ties on (start, end)
// are ordered by the new ids: the cut is sorted by its own ids, as if loaded and sorted anew.
TEST(FlowTableSort, CopyAndKeepRowsAreSortedByTheirOwnIds) {
  FlowTable all = Random(20'000, 30, 4'000, 3, 21);
  all.SortByStart();
  const size_t lo = 7'000, hi = 15'000;
  FlowTable copy = all.CopyRows(lo, hi);
  FlowTable reloaded;
  for (size_t i = lo; i < hi; ++i) {
    FlowRecord r;
    r.start_ns = all.start_ns()[i];
    r.end_ns = all.EndNs(i);
    r.src = all.endpoints().Addr(all.src()[i]);
    r.dst = all.endpoints().Addr(all.dst()[i]);
    r.bytes = all.Bytes(i);
    r.qp = all.qp()[i];
    r.sampling_rate = all.SamplingRate(i);
    r.point = all.point()[i];
    reloaded.OnRecord(r);
  }
  const std::vector<Row> want = ReferenceOrder(Rows(reloaded));
  ExpectRows(Rows(copy), want);
  all.KeepRows(lo, hi);
  ExpectRows(Rows(all), want);
}


// With threads, KeepRows finds the endpoints' first rows, remaps the rows, checks the order and
// orders the ties in runs of rows side by side: the table, endpoint ids and bounds one thread
// gives. Starts take 400 values, so runs of ~700 equal starts straddle the points where the rows
// are cut; some endpoints appear only in the last rows (the last run), the others in every run.
TEST(FlowTableSort, KeepRowsOnThreadsGivesTheOneThreadTable) {
  auto make = [] {
    FlowTable t = Random(300'000, 3'000, 400, 3, 23);
    for (uint32_t k = 0; k < 50; ++k) {
      FlowRecord r;
      r.src = IpAddr::FromV4(0x0B000000u + k);
      r.dst = IpAddr::FromV4(0x0A000000u + k);
      r.start_ns = 1'700'000'000'000'000'000 + 399;
      r.end_ns = r.start_ns + 1;
      r.bytes = 300'000 + k;
      t.OnRecord(r);
    }
    t.SortByStart();
    return t;
  };
  const size_t lo = 10'000, hi = 300'050;
  FlowTable one = make();
  one.KeepRows(lo, hi, 1);
  for (int threads : {2, 3}) {
    SCOPED_TRACE(threads);
    FlowTable many = make();
    many.KeepRows(lo, hi, threads);
    ExpectRows(Rows(many), Rows(one));
    ASSERT_EQ(many.endpoints().size(), one.endpoints().size());
    for (EndpointId e = 0; e < one.endpoints().size(); ++e)
      EXPECT_EQ(many.endpoints().Addr(e), one.endpoints().Addr(e)) << "endpoint " << e;
    EXPECT_EQ(many.min_start_ns(), one.min_start_ns());
    EXPECT_EQ(many.max_end_ns(), one.max_end_ns());
  }
  // And one thread's is the promised order (start, end, src, dst) by the kept rows' own ids.
  const std::vector<Row> want = ReferenceOrder(Rows(one));
  ExpectRows(Rows(one), want);
  EXPECT_GT(one.endpoints().size(), 3'000u);  // the endpoints of the last rows only are in
}


// Keeping every row (a run's one window) keeps the bounds as they were, which are those of the
// rows: the smallest start and the largest end; a cut's bounds are its own rows'.
TEST(FlowTableSort, KeepRowsOfEveryRowKeepsTheRowsBounds) {
  auto bounds_of_rows = [](const FlowTable& t) {
    const auto start = t.start_ns();
    int64_t last_end = INT64_MIN;
    for (size_t r = 0; r < t.size(); ++r) last_end = std::max(last_end, t.EndNs(r));
    return std::pair(*std::min_element(start.begin(), start.end()), last_end);
  };
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    FlowTable all = Random(50'000, 500, 400, 3, 29);
    all.SortByStart(threads);
    all.KeepRows(0, all.size(), threads);
    EXPECT_EQ(std::pair(all.min_start_ns(), all.max_end_ns()), bounds_of_rows(all));
    all.KeepRows(1'000, 20'000, threads);
    EXPECT_EQ(std::pair(all.min_start_ns(), all.max_end_ns()), bounds_of_rows(all));
  }
}

// The table knows when its rows are in SortByStart's order: after a sort, a cut or a copy, and
// not after an append; a cut of a sorted table is the table a full sort of the cut gives.
TEST(FlowTableSort, KnowsWhenItsRowsAreSortedByStart) {
  FlowTable t = Random(20'000, 300, 50, 3, 31);
  EXPECT_FALSE(t.sorted_by_start());
  t.SortByStart(2);
  EXPECT_TRUE(t.sorted_by_start());
  FlowTable copy = t.CopyRows(100, 15'000);
  EXPECT_TRUE(copy.sorted_by_start());
  FlowRecord late;
  late.src = IpAddr::FromV4(0x0A000001u);
  late.dst = IpAddr::FromV4(0x0A000002u);
  late.start_ns = 1;  // before every other start
  late.end_ns = 2;
  t.OnRecord(late);
  EXPECT_FALSE(t.sorted_by_start());
  t.SortByStart();
  EXPECT_EQ(t.start_ns()[0], 1);
  // Kept rows of the sorted table, ties ordered by the new ids: as the copy of the same rows.
  t.KeepRows(101, 15'001, 2);
  EXPECT_TRUE(t.sorted_by_start());
  ExpectRows(Rows(t), Rows(copy));
  ExpectRows(Rows(t), ReferenceOrder(Rows(t)));
}

// Rows appended a batch at a time (the decoders' column path) give the table OnRecord gives one
// by one: the same columns, endpoints interned in the same order. 40,000 addresses over 16,384
// cache slots, so slots are shared and overwritten; a KeepRows in between replaces the endpoint
// table the cache's ids point into.
TEST(FlowTable, BatchesGiveTheTableRecordsGive) {
  std::mt19937_64 rng(11);
  std::vector<FlowRecord> records(60'000);
  for (FlowRecord& r : records) {
    const bool v6 = rng() % 7 == 0;
    auto addr = [&] {
      const uint32_t host = static_cast<uint32_t>(rng() % 40'000);
      if (!v6) return IpAddr::FromV4(0x0a000000 | host);
      uint8_t b[16] = {0xfd};
      b[14] = static_cast<uint8_t>(host >> 8);
      b[15] = static_cast<uint8_t>(host);
      return IpAddr::FromV6(b);
    };
    r.src = addr();
    r.dst = rng() % 3 == 0 ? r.src : addr();
    r.start_ns = static_cast<int64_t>(rng() % 1'000'000);
    r.end_ns = r.start_ns + static_cast<int64_t>(rng() % 1000);
    r.bytes = rng();
    r.qp = static_cast<uint32_t>(rng());
    r.point = static_cast<PointId>(rng() % 9);
    r.sampling_rate = 1 + static_cast<uint32_t>(rng() % 3);
  }
  FlowTable one, batched;
  RecordBatch batch;
  auto feed = [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) one.OnRecord(records[i]);
    for (size_t i = lo; i < hi;) {
      const size_t n = std::min<size_t>(hi - i, 1 + rng() % 700);
      batch.Reserve(n);
      batch.size = n;
      for (size_t k = 0; k < n; ++k, ++i) PutRow(&batch, k, records[i]);
      batched.OnBatch(&batch);
    }
  };
  auto expect_same = [&] { ExpectSameTable(batched, one); };
  feed(0, 30'000);
  expect_same();
  one.KeepRows(10'000, 20'000);
  batched.KeepRows(10'000, 20'000);
  feed(30'000, records.size());
  expect_same();
}

// The resident pages among the whole pages of [begin, end) (mincore).
size_t ResidentPages(const void* begin, const void* end) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(begin) + page - 1) & ~(page - 1);
  const uintptr_t hi = reinterpret_cast<uintptr_t>(end) & ~(page - 1);
  if (lo >= hi) return 0;
  std::vector<unsigned char> in_core((hi - lo) / page);
  if (mincore(reinterpret_cast<void*>(lo), hi - lo, in_core.data()) != 0) return SIZE_MAX;
  return static_cast<size_t>(
      std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return (c & 1) != 0; }));
}

TEST(FlowTable, UnusedCapacityGoesBackToTheSystem) {
  constexpr size_t kRows = 1 << 20;  // 8 MiB of starts: a big block (core/big_blocks.h)
  FlowTable t;
  t.Reserve(kRows);
  for (size_t i = 0; i < kRows; ++i) {
    t.OnRecord(Rec("10.0.0.1", "10.0.0.2", static_cast<int64_t>(i), i));
  }
  // KeepRows keeps the columns' storage: the rows past the kept ones were written, so resident.
  t.KeepRows(0, 1000);
  const int64_t* starts = t.start_ns().data();
  ASSERT_GT(ResidentPages(starts + 1000, starts + kRows), 0u);
  t.ReleaseUnusedCapacity();
  EXPECT_EQ(ResidentPages(starts + 1000, starts + kRows), 0u);
  const uint32_t* bytes = t.bytes_low().data();
  EXPECT_EQ(ResidentPages(bytes + 1000, bytes + kRows), 0u);
  ASSERT_EQ(t.size(), 1000u);  // the rows themselves stay
  EXPECT_EQ(t.start_ns()[999], 999);
  EXPECT_EQ(t.Bytes(999), 999u);
  EXPECT_EQ(t.endpoints().size(), 2u);
}

}  // namespace
}  // namespace prism::flow
