#include "pipeline/record_handoff.h"

#include <gtest/gtest.h>

#include <vector>

namespace prism::pipeline {
namespace {

struct Collect : FlowSink {
  std::vector<FlowRecord> records;
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
};

FlowRecord Numbered(int64_t i) {
  FlowRecord r;
  r.start_ns = i;
  r.end_ns = i + 7;
  r.bytes = uint64_t(i) * 3;
  r.qp = uint32_t(i % 1000);
  return r;
}

TEST(RecordHandOff, DeliversEveryRecordInOrder) {
  Collect inner;
  RecordHandOff handoff(&inner);
  const int64_t n = 100'003;  // many batches and a partial last one
  for (int64_t i = 0; i < n; ++i) handoff.OnRecord(Numbered(i));
  handoff.Finish();
  ASSERT_EQ(inner.records.size(), size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(inner.records[size_t(i)].start_ns, i);
    ASSERT_EQ(inner.records[size_t(i)].end_ns, i + 7);
    ASSERT_EQ(inner.records[size_t(i)].bytes, uint64_t(i) * 3);
  }
  handoff.Finish();  // again: nothing more, no hang
  EXPECT_EQ(inner.records.size(), size_t(n));
}

TEST(RecordHandOff, NoRecordAndDestructionWithoutFinish) {
  Collect none;
  { RecordHandOff handoff(&none); }
  EXPECT_TRUE(none.records.empty());
  Collect some;
  {
    RecordHandOff handoff(&some);
    for (int64_t i = 0; i < 10; ++i) handoff.OnRecord(Numbered(i));
  }  // the destructor hands over the partial batch and waits
  ASSERT_EQ(some.records.size(), 10u);
  EXPECT_EQ(some.records[9].start_ns, 9);
}

}  // namespace
}  // namespace prism::pipeline
