#include "core/record_batch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace prism {
namespace {

// A batch of n rows whose every column holds the row's number (in its own way).
RecordBatch Numbered(size_t n) {
  RecordBatch b;
  b.Reserve(n);
  b.size = n;
  for (size_t i = 0; i < n; ++i) {
    b.start_ns[i] = int64_t(i);
    b.end_ns[i] = int64_t(i) + 100;
    b.src[i] = IpAddr::FromV4(uint32_t(i));
    b.dst[i] = IpAddr::FromV4(uint32_t(i) + 1000);
    b.bytes[i] = i * 10;
    b.qp[i] = uint32_t(i) + 7;
    b.point[i] = PointId(i);
    b.sampling_rate[i] = uint32_t(i) + 1;
  }
  return b;
}

// The rows kept, by number, each checked in every column.
std::vector<size_t> KeptRows(const RecordBatch& b) {
  std::vector<size_t> rows;
  for (size_t k = 0; k < b.size; ++k) {
    const size_t i = size_t(b.start_ns[k]);
    EXPECT_EQ(b.end_ns[k], int64_t(i) + 100);
    EXPECT_EQ(b.src[k], IpAddr::FromV4(uint32_t(i)));
    EXPECT_EQ(b.dst[k], IpAddr::FromV4(uint32_t(i) + 1000));
    EXPECT_EQ(b.bytes[k], i * 10);
    EXPECT_EQ(b.qp[k], uint32_t(i) + 7);
    EXPECT_EQ(b.point[k], PointId(i));
    EXPECT_EQ(b.sampling_rate[k], uint32_t(i) + 1);
    rows.push_back(i);
  }
  return rows;
}

// Dropped rows go wherever they are (none, the first, the last, a run inside, all); the others
// stay in order with all their fields.
TEST(RecordBatch, RemoveIfKeepsTheOtherRowsInOrder) {
  struct Case {
    std::vector<size_t> drop;
    std::vector<size_t> kept;
  };
  const std::vector<Case> cases = {
      {{}, {0, 1, 2, 3, 4, 5}},        {{0}, {1, 2, 3, 4, 5}},   {{5}, {0, 1, 2, 3, 4}},
      {{2, 3}, {0, 1, 4, 5}},          {{1, 4}, {0, 2, 3, 5}},   {{0, 1, 2, 3, 4, 5}, {}},
  };
  for (const Case& c : cases) {
    RecordBatch b = Numbered(6);
    const size_t removed = b.RemoveIf([&](size_t i) {
      return std::find(c.drop.begin(), c.drop.end(), size_t(b.start_ns[i])) != c.drop.end();
    });
    EXPECT_EQ(removed, c.drop.size());
    EXPECT_EQ(KeptRows(b), c.kept);
  }
}

}  // namespace
}  // namespace prism
