#include "core/ip_addr.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace prism {
namespace {

TEST(IpAddr, ParsesAndPrintsV4) {
  auto a = IpAddr::Parse("10.1.2.3");
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->is_v4());
  EXPECT_EQ(a->v4(), 0x0A010203u);
  EXPECT_EQ(a->ToString(), "10.1.2.3");
}

TEST(IpAddr, ParsesAndPrintsV6) {
  auto a = IpAddr::Parse("fd00::1:2");
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->is_v4());
  EXPECT_EQ(a->ToString(), "fd00::1:2");
}

// Equality and order are those of the 16 bytes compared one by one (the order addresses sort in
// everywhere: endpoint tables, stages, reports), for addresses differing in any byte.
TEST(IpAddr, ComparesAsItsBytesInOrder) {
  std::mt19937 rng(7);
  std::vector<IpAddr> addrs;
  uint8_t b[16] = {};
  for (int i = 0; i < 400; ++i) {
    // Mostly one or two bytes apart, in every position, so both words and every byte decide.
    const int pos = i % 16;
    b[pos] = static_cast<uint8_t>(rng());
    if (i % 3 == 0) b[(pos + 9) % 16] = static_cast<uint8_t>(rng());
    addrs.push_back(IpAddr::FromV6(b));
  }
  addrs.push_back(addrs.front());  // one equal pair at least
  for (const IpAddr& x : addrs) {
    for (const IpAddr& y : addrs) {
      const int bytes = std::memcmp(x.bytes().data(), y.bytes().data(), 16);
      ASSERT_EQ(x == y, bytes == 0);
      ASSERT_EQ(x < y, bytes < 0);
      ASSERT_EQ(x > y, bytes > 0);
    }
  }
}

TEST(IpAddr, RejectsGarbage) {
  EXPECT_FALSE(IpAddr::Parse("").has_value());
  EXPECT_FALSE(IpAddr::Parse("10.1.2").has_value());
  EXPECT_FALSE(IpAddr::Parse("10.1.2.300").has_value());
  EXPECT_FALSE(IpAddr::Parse("hello").has_value());
  EXPECT_FALSE(IpAddr::Parse(std::string(100, '1')).has_value());
}

TEST(IpAddr, V4AndV6AreDistinctKeys) {
  auto a = *IpAddr::Parse("10.0.0.1");
  auto b = *IpAddr::Parse("::a00:1");  // IPv4-compatible, not mapped
  EXPECT_NE(a, b);
  EXPECT_NE(IpAddrHash{}(a), IpAddrHash{}(b));
}

}  // namespace
}  // namespace prism
