// File: flow/flow_table_testing.h
// For tests: a record put in a RecordBatch's row; two FlowTables the same row for row (every
// column), endpoint for endpoint (ids and addresses) and in their time bounds.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>

#include "core/record_batch.h"
#include "flow/flow_table.h"

namespace prism::flow {

inline void PutRow(RecordBatch* batch, size_t row, const FlowRecord& r) {
  batch->start_ns[row] = r.start_ns;
  batch->end_ns[row] = r.end_ns;
  batch->src[row] = r.src;
  batch->dst[row] = r.dst;
  batch->bytes[row] = r.bytes;
  batch->qp[row] = r.qp;
  batch->point[row] = r.point;
  batch->sampling_rate[row] = r.sampling_rate;
}

inline void ExpectSameTable(const FlowTable& got, const FlowTable& want) {
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.endpoints().size(), want.endpoints().size());
  for (EndpointId e = 0; e < want.endpoints().size(); ++e) {
    ASSERT_EQ(got.endpoints().Addr(e), want.endpoints().Addr(e));
  }
  auto same = [](auto a, auto b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); };
  EXPECT_TRUE(same(got.start_ns(), want.start_ns()));
  EXPECT_TRUE(same(got.duration_low(), want.duration_low()));
  EXPECT_TRUE(same(got.duration_high(), want.duration_high()));
  EXPECT_TRUE(same(got.src(), want.src()));
  EXPECT_TRUE(same(got.dst(), want.dst()));
  EXPECT_TRUE(same(got.bytes_low(), want.bytes_low()));
  EXPECT_TRUE(same(got.bytes_high(), want.bytes_high()));
  EXPECT_TRUE(same(got.qp(), want.qp()));
  EXPECT_TRUE(same(got.point(), want.point()));
  EXPECT_TRUE(same(got.sampling_rate(), want.sampling_rate()));
  EXPECT_EQ(got.min_start_ns(), want.min_start_ns());
  EXPECT_EQ(got.max_end_ns(), want.max_end_ns());
}

}  // namespace prism::flow
