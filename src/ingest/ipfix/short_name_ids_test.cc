#include "ingest/ipfix/short_name_ids.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace prism::ingest {
namespace {

TEST(ShortNameIds, AnswersEveryNameKeptOfEveryLength) {
  // Every length 1..32, the names of one length alike but for a number in their middle, as
  // switch names share their first and last bytes.
  std::vector<std::string> names;
  for (size_t len = 1; len <= ShortNameIds::kMaxNameBytes; ++len)
    for (int i = 0; i < 150; ++i) {
      const std::string number = std::to_string(i);
      if (number.size() > len) break;
      std::string name(len, 'x');
      name.replace((len - number.size()) / 2, number.size(), number);
      names.push_back(name);
    }
  ShortNameIds ids;
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(ids.Find(names[i]), kNoPoint) << names[i];
    ids.Insert(names[i], PointId(i));
  }
  EXPECT_EQ(ids.size(), names.size());
  EXPECT_GT(ids.size(), 4000u);  // the table grew several times
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(ids.Find(names[i]), PointId(i)) << names[i];
}

TEST(ShortNameIds, TellsApartNamesThatDifferInOneByteOrInLength) {
  ShortNameIds ids;
  const std::string base = "leaf-p000-r0-spine-0000-uplink";  // 30 bytes
  ids.Insert(base, 7);
  for (size_t at = 0; at < base.size(); ++at) {
    std::string other = base;
    other[at] = '#';
    EXPECT_EQ(ids.Find(other), kNoPoint) << other;
  }
  EXPECT_EQ(ids.Find(base.substr(0, 29)), kNoPoint);
  EXPECT_EQ(ids.Find(base + "x"), kNoPoint);
  EXPECT_EQ(ids.Find(std::string_view(base.data(), 7)), kNoPoint);  // the short (< 8 bytes) path
  ids.Insert(std::string_view(base.data(), 7), 8);
  EXPECT_EQ(ids.Find("leaf-p0"), 8u);
  EXPECT_EQ(ids.Find(base), 7u);
}

TEST(ShortNameIds, KeepsNoLongNameAndStopsAtItsLimit) {
  ShortNameIds ids;
  const std::string long_name(ShortNameIds::kMaxNameBytes + 1, 's');
  ids.Insert(long_name, 1);
  EXPECT_EQ(ids.Find(long_name), kNoPoint);
  EXPECT_EQ(ids.size(), 0u);
  for (size_t i = 0; i < ShortNameIds::kMaxNames + 10; ++i)
    ids.Insert("switch-" + std::to_string(i), PointId(i));
  EXPECT_EQ(ids.size(), ShortNameIds::kMaxNames);
  EXPECT_EQ(ids.Find("switch-0"), 0u);
  EXPECT_EQ(ids.Find("switch-65535"), 65535u);
  EXPECT_EQ(ids.Find("switch-65536"), kNoPoint);
}

}  // namespace
}  // namespace prism::ingest
