#include "scaleout/pair_summary.h"

#include <gtest/gtest.h>

namespace prism::scaleout {
namespace {

constexpr int64_t kS = 1'000'000'000;

FlowRecord Rec(int64_t start_ns, const char* src, const char* dst) {
  FlowRecord r;
  r.start_ns = r.end_ns = start_ns;
  r.src = *IpAddr::Parse(src);
  r.dst = *IpAddr::Parse(dst);
  return r;
}

TEST(PairSummary, RoundTripsIpv4AndIpv6) {
  std::vector<PairSighting> in = {{10 * kS, *IpAddr::Parse("10.0.0.1"), *IpAddr::Parse("10.0.0.2")},
                                  {-5 * kS, *IpAddr::Parse("fd00::1"), *IpAddr::Parse("fd00::2")}};
  const std::string bytes = EncodePairSummary(in);
  auto out = DecodePairSummary({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out, in);
}

TEST(PairSummary, BadMessagesNameWhatIsWrong) {
  std::string bytes = EncodePairSummary(
      std::vector<PairSighting>{{0, *IpAddr::Parse("10.0.0.1"), *IpAddr::Parse("10.0.0.2")}});
  auto span = [](const std::string& s) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  auto cut = DecodePairSummary(span(bytes.substr(0, bytes.size() - 1)));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message.find("byte 8"), std::string::npos) << cut.error().message;
  auto other = DecodePairSummary(span("LPRB" + bytes.substr(4)));
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("byte 0"), std::string::npos);
}

TEST(PairSummaryBuilder, GivesEachPairOncePerBucket) {
  PairSummaryBuilder b(10 * kS, 3);
  b.Add(Rec(1 * kS, "10.0.0.1", "10.0.0.2"));
  b.Add(Rec(2 * kS, "10.0.0.1", "10.0.0.2"));   // same bucket: once
  b.Add(Rec(12 * kS, "10.0.0.1", "10.0.0.2"));  // next bucket: again
  auto first = b.TakeNew();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].bucket_start_ns, 0);
  EXPECT_EQ(first[1].bucket_start_ns, 10 * kS);
  b.Add(Rec(3 * kS, "10.0.0.1", "10.0.0.2"));  // given already
  b.Add(Rec(-1, "10.0.0.3", "10.0.0.4"));      // floor, not truncation: bucket -10 s
  auto second = b.TakeNew();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].bucket_start_ns, -10 * kS);
  EXPECT_EQ(b.pairs_given(), 3u);
}

}  // namespace
}  // namespace prism::scaleout
