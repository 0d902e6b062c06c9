#include "service/http_api.h"

#include <gtest/gtest.h>

namespace prism::service {
namespace {

TEST(TokenMatches, OnlyTheExactBearerToken) {
  EXPECT_TRUE(TokenMatches("Bearer abc123", "abc123"));
  EXPECT_FALSE(TokenMatches("Bearer abc124", "abc123"));   // last byte
  EXPECT_FALSE(TokenMatches("Bearer bbc123", "abc123"));   // first byte
  EXPECT_FALSE(TokenMatches("Bearer abc12", "abc123"));    // a prefix
  EXPECT_FALSE(TokenMatches("Bearer abc1234", "abc123"));  // longer
  EXPECT_FALSE(TokenMatches("bearer abc123", "abc123"));
  EXPECT_FALSE(TokenMatches("", "abc123"));
  EXPECT_FALSE(TokenMatches("abc123", "abc123"));
  // A header with a NUL where the token ends must not match a shorter expected value.
  EXPECT_FALSE(TokenMatches(std::string_view("Bearer abc123\0", 14), "abc123"));
}

TEST(ParseApiTime, NsSecondsAndRefusals) {
  EXPECT_EQ(ParseApiTime("1700000000"), 1'700'000'000'000'000'000);
  EXPECT_EQ(ParseApiTime("1700000000000000000"), 1'700'000'000'000'000'000);
  EXPECT_EQ(ParseApiTime("1700000000.5"), 1'700'000'000'500'000'000);
  EXPECT_EQ(ParseApiTime("-5"), -5'000'000'000);
  EXPECT_EQ(ParseApiTime("1.7e9"), 1'700'000'000'000'000'000);
  for (const char* bad : {"", "1e300", "-1e300", "nan", "inf", "abc", "12abc",
                          "99999999999999999999", "9300000000", "1e10"}) {
    EXPECT_FALSE(ParseApiTime(bad)) << bad;
  }
}

}  // namespace
}  // namespace prism::service
