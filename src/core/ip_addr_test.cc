#include "core/ip_addr.h"

#include <gtest/gtest.h>

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
