#include "pipeline/record_duration.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "core/record_batch.h"

namespace prism::pipeline {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

FlowRecord Rec(int64_t start_ns, int64_t end_ns) {
  FlowRecord r;
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.bytes = 1 << 20;
  return r;
}

struct Collect : FlowSink {
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
  std::vector<FlowRecord> records;
};

TEST(PlausibleDuration, UpToTheLimitInclusive) {
  const int64_t t = 1'700'000'000 * kS;
  EXPECT_TRUE(PlausibleDuration(Rec(t, t), kDefaultMaxRecordNs));  // one packet
  EXPECT_TRUE(PlausibleDuration(Rec(t, t + kDefaultMaxRecordNs), kDefaultMaxRecordNs));
  EXPECT_FALSE(PlausibleDuration(Rec(t, t + kDefaultMaxRecordNs + 1), kDefaultMaxRecordNs));
  EXPECT_FALSE(PlausibleDuration(Rec(t, t - 1), kDefaultMaxRecordNs));  // ends before it starts
  EXPECT_TRUE(PlausibleDuration(Rec(t, t + 10 * kS), 10 * kS));
  EXPECT_FALSE(PlausibleDuration(Rec(t, t + 10 * kS + 1), 10 * kS));
  EXPECT_EQ(kDefaultMaxRecordNs, static_cast<int64_t>(kDefaultMaxRecordS * 1e9));
}

TEST(PlausibleDuration, YearsAndExtremesWithoutOverflow) {
  const int64_t t = 1'700'000'000 * kS;
  EXPECT_FALSE(PlausibleDuration(Rec(-5, t), kDefaultMaxRecordNs));  // 53 years
  EXPECT_FALSE(PlausibleDuration(Rec(0, t), kDefaultMaxRecordNs));
  // end - start overflows int64: must still read as far too long, not as negative.
  EXPECT_FALSE(PlausibleDuration(Rec(kMin, kMax), kDefaultMaxRecordNs));
  EXPECT_FALSE(PlausibleDuration(Rec(-5, kMax), kDefaultMaxRecordNs));
  EXPECT_FALSE(PlausibleDuration(Rec(kMax, kMin), kDefaultMaxRecordNs));
  EXPECT_TRUE(PlausibleDuration(Rec(kMax, kMax), kDefaultMaxRecordNs));
  EXPECT_TRUE(PlausibleDuration(Rec(kMin, kMin + kS), kDefaultMaxRecordNs));
}

TEST(DurationFilter, CountsAndSkipsOnlyImplausibleRecords) {
  const int64_t t = 1'700'000'000 * kS;
  Collect out;
  Stats stats;
  DurationFilter filter(&out, kDefaultMaxRecordNs, &stats);
  filter.OnRecord(Rec(t, t + 500));
  filter.OnRecord(Rec(-5, t + 1000));  // years long
  filter.OnRecord(Rec(t + 2000, t + 1000));  // ends before it starts
  filter.OnRecord(Rec(t + 3000, t + 3500));
  ASSERT_EQ(out.records.size(), 2u);
  EXPECT_EQ(out.records[0].start_ns, t);
  EXPECT_EQ(out.records[1].start_ns, t + 3000);
  EXPECT_EQ(stats.Get(Stat::record_bad_duration), 2u);
  EXPECT_EQ(stats.SkippedTotal(), 2u);  // data loss: shown and reflected in the exit code
}

// Batches (the decoders' column path): the same rows dropped and counted, the rest forwarded in
// order; a filter in front of a sink without a batch side has none either.
struct CollectBatches : FlowSink, BatchSink {
  void OnRecord(const FlowRecord&) override {}
  void OnBatch(RecordBatch* b) override {
    for (size_t i = 0; i < b->size; ++i) starts.push_back(b->start_ns[i]);
  }
  std::vector<int64_t> starts;
};

TEST(DurationFilter, BatchesLoseTheSameRows) {
  const int64_t t = 1'700'000'000 * kS;
  CollectBatches out;
  Stats stats;
  DurationFilter filter(&out, kDefaultMaxRecordNs, &stats);
  ASSERT_EQ(BatchSideOf(&filter), &filter);
  RecordBatch batch;
  batch.Reserve(4);
  batch.size = 4;
  const int64_t starts[] = {t, -5, t + 2000, t + 3000};
  const int64_t ends[] = {t + 500, t + 1000, t + 1000, t + 3500};
  for (size_t i = 0; i < 4; ++i) {
    batch.start_ns[i] = starts[i];
    batch.end_ns[i] = ends[i];
  }
  filter.OnBatch(&batch);
  EXPECT_EQ(out.starts, (std::vector<int64_t>{t, t + 3000}));
  EXPECT_EQ(stats.Get(Stat::record_bad_duration), 2u);
  Collect records_only;
  DurationFilter plain(&records_only, kDefaultMaxRecordNs, &stats);
  EXPECT_EQ(BatchSideOf(&plain), nullptr);
}

}  // namespace
}  // namespace prism::pipeline
