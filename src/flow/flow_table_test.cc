#include "flow/flow_table.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(t.bytes()[0], 1u);
  EXPECT_EQ(t.bytes()[1], 2u);
  EXPECT_EQ(t.endpoints().Addr(t.src()[1]).ToString(), "fd00::1");
  EXPECT_EQ(t.bytes()[2], 3u);
  EXPECT_EQ(t.min_start_ns(), 100);
  EXPECT_EQ(t.max_end_ns(), 310);
}

}  // namespace
}  // namespace prism::flow
