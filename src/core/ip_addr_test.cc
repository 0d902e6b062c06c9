#include "core/ip_addr.h"

#include <arpa/inet.h>
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

// IPv4 is printed without inet_ntop: the same text as inet_ntop gives, for every octet value in
// every position (0, one, two and three digits) and random addresses, and it parses back.
TEST(IpAddr, PrintsV4AsInetNtopDoes) {
  std::mt19937 rng(11);
  std::vector<uint32_t> addrs = {0, 0xFFFFFFFFu, 0x0A000001u, 0x7F000001u, 0xC0A80064u};
  for (uint32_t octet = 0; octet < 256; ++octet)  // the others 1: 1.1.1.octet, 1.1.octet.1, ...
    for (int shift = 0; shift < 32; shift += 8)
      addrs.push_back((0x01010101u & ~(0xFFu << shift)) | (octet << shift));
  for (int i = 0; i < 2000; ++i) addrs.push_back(static_cast<uint32_t>(rng()));
  for (const uint32_t host_order : addrs) {
    in_addr v4{htonl(host_order)};
    char want[INET_ADDRSTRLEN];
    ASSERT_NE(inet_ntop(AF_INET, &v4, want, sizeof want), nullptr);
    const IpAddr a = IpAddr::FromV4(host_order);
    EXPECT_EQ(a.ToString(), want);
    EXPECT_EQ(IpAddr::Parse(a.ToString()), a);
  }
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
