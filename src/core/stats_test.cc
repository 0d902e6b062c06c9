#include "core/stats.h"

#include <gtest/gtest.h>

#include <string>

namespace prism {
namespace {

TEST(Stats, CountsAndMerges) {
  Stats a, b;
  a.Add(Stat::csv_bad_row, 2);
  b.Add(Stat::csv_bad_row);
  b.Add(Stat::records_read, 10);
  a.Merge(b);
  EXPECT_EQ(a.Get(Stat::csv_bad_row), 3u);
  EXPECT_EQ(a.Get(Stat::records_read), 10u);
  EXPECT_EQ(a.SkippedTotal(), 3u);  // records_read is informational
}

TEST(Stats, EveryCounterHasNameAndDescription) {
  for (const auto& info : kStatInfo) {
    EXPECT_FALSE(std::string(info.name).empty());
    EXPECT_FALSE(std::string(info.description).empty());
  }
}

}  // namespace
}  // namespace prism
