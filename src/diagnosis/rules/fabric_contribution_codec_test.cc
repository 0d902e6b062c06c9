#include "diagnosis/rules/fabric_contribution_codec.h"

#include <gtest/gtest.h>

#include <random>

namespace prism::diagnosis {
namespace {

// Two jobs on two leaves, v4 and v6 ends, a record of no point, a point of two digits' index.
FabricContribution Sample() {
  FabricContribution c;
  c.first_start_ns = 1'700'000'000'000'000'000;
  c.last_start_ns = c.first_start_ns + 19'999'000'000;
  c.jobs = {"job-56f17e65b72b", "job-2b2bdb0ea550"};
  c.leaf_names = {"leaf-p000-r0", "leaf-p000-r1"};
  for (int i = 0; i < 12; ++i) c.points.push_back("spine" + std::to_string(i));
  const uint8_t v6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
  c.endpoint_addr = {IpAddr::FromV4(0x0a000001), IpAddr::FromV4(0x0a000102), IpAddr::FromV6(v6)};
  c.endpoint_job = {0, 0, 1};
  c.endpoint_leaf = {0, 1, -1};
  c.pairs = {{0, 1, analysis::PairLabel::kDp}, {1, 2, analysis::PairLabel::kPp}};
  for (int r = 0; r < 40; ++r) {
    c.start_ns.push_back(c.first_start_ns + int64_t(r) * 499'000'000);
    c.end_ns.push_back(c.start_ns.back() + 1'000 + r * 37);
    c.bytes.push_back(uint64_t(1) << (12 + r % 20));
    c.src.push_back(uint32_t(r % 3));
    c.dst.push_back(uint32_t((r + 1) % 3));
    c.point.push_back(r % 5 == 0 ? kNoPoint : uint32_t(r % 12));
  }
  return c;
}

std::span<const uint8_t> Span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(FabricContributionCodec, EveryFieldComesBack) {
  const FabricContribution c = Sample();
  const auto back = DecodeFabricContribution(Span(EncodeFabricContribution(c)));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, c);
}

// A shard with no record of a window still publishes: the stage then knows the window is whole.
TEST(FabricContributionCodec, AnEmptyContributionComesBack) {
  const FabricContribution none;
  const std::string bytes = EncodeFabricContribution(none);
  EXPECT_EQ(bytes.size(), 31u);
  const auto back = DecodeFabricContribution(Span(bytes));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, none);
}

// Every cut of a message is an error (the counts say what must follow), and so is anything
// after its end.
TEST(FabricContributionCodec, EveryTruncationIsAnError) {
  const std::string bytes = EncodeFabricContribution(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    const auto cut = DecodeFabricContribution(Span(bytes.substr(0, n)));
    ASSERT_FALSE(cut.has_value()) << n;
    EXPECT_NE(cut.error().message.find("fabric contribution:"), std::string::npos);
  }
  EXPECT_FALSE(DecodeFabricContribution(Span(bytes + '\0')).has_value());
}

// Garbled bytes give an error or a contribution whose indices are all in range: never a crash
// (under the sanitizers: unit_decoders_asan).
TEST(FabricContributionCodec, FlippedBytesNeverGiveIndicesOutOfRange) {
  const std::string bytes = EncodeFabricContribution(Sample());
  std::mt19937_64 rng(7);
  size_t decoded = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string b = bytes;
    for (int k = 0; k < 1 + trial % 4; ++k) b[rng() % b.size()] ^= char(1 + rng() % 255);
    const auto c = DecodeFabricContribution(Span(b));
    if (!c.has_value()) continue;
    ++decoded;
    for (size_t r = 0; r < c->records(); ++r) {
      ASSERT_LT(c->src[r], c->endpoint_addr.size());
      ASSERT_LT(c->dst[r], c->endpoint_addr.size());
      ASSERT_TRUE(c->point[r] == kNoPoint || c->point[r] < c->points.size());
    }
    for (size_t e = 0; e < c->endpoint_addr.size(); ++e) {
      ASSERT_LT(c->endpoint_job[e], int32_t(c->jobs.size()));
      ASSERT_LT(c->endpoint_leaf[e], int32_t(c->leaf_names.size()));
    }
  }
  EXPECT_GT(decoded, 0u);  // flips inside a value decode: the loop checked some
}

}  // namespace
}  // namespace prism::diagnosis
