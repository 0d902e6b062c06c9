#include "ingest/pcap/psn_span.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

namespace prism::ingest {
namespace {

PsnSpan SpanOf(const std::vector<uint32_t>& psns) {
  PsnSpan s;
  for (uint32_t p : psns) s.Add(true, p);
  return s;
}

TEST(PsnSpan, SpanIsTheForwardDistanceAcrossTheWrap) {
  // 0xFFFFF0 -> 0xFFFFFA: 10 packets; 0xFFFFFA -> 0x000005 across the 24-bit wrap: 11.
  const PsnSpan s = SpanOf({0xFFFFF0, 0xFFFFFA, 0x000005});
  EXPECT_TRUE(s.monotonic());
  EXPECT_EQ(s.span_packets(), 21u);
  // 21 + 2 x 100 - 1 = 220 packets at the samples' mean payload (3 x 4096 / 3).
  const SampledBytes b = EstimateSampledBytes(&s, 3 * 4096, 3, 100);
  EXPECT_EQ(b.how, SampledEstimate::kPsnSpan);
  EXPECT_EQ(b.bytes, 220u * 4096);
}

TEST(PsnSpan, SpansLongerThanThePsnSpaceAddUp) {
  // Steps under 2^23 each, 2^25 packets in all: more than the 24-bit space holds.
  PsnSpan s;
  uint32_t psn = 5;
  s.Add(true, psn);
  for (int i = 0; i < 8; ++i) {
    psn = (psn + (1u << 22)) & 0xFFFFFF;
    s.Add(true, psn);
  }
  EXPECT_TRUE(s.monotonic());
  EXPECT_EQ(s.span_packets(), uint64_t{1} << 25);
}

TEST(PsnSpan, ASingleSampleIsBytesTimesN) {
  const PsnSpan s = SpanOf({1234});
  EXPECT_TRUE(s.monotonic());
  EXPECT_EQ(s.span_packets(), 0u);
  const SampledBytes b = EstimateSampledBytes(&s, 4096, 1, 1000);
  EXPECT_EQ(b.how, SampledEstimate::kTimesN);
  EXPECT_EQ(b.bytes, 4096u * 1000);
}

TEST(PsnSpan, RetransmissionFallsBackToBytesTimesN) {
  // Go-back-N: the sender resends from PSN 150 after 200 was sampled.
  PsnSpan back = SpanOf({100, 200, 150, 400});
  EXPECT_FALSE(back.monotonic());
  SampledBytes b = EstimateSampledBytes(&back, 4 * 4096, 4, 100);
  EXPECT_EQ(b.how, SampledEstimate::kPsnUnusable);
  EXPECT_EQ(b.bytes, 4u * 4096 * 100);
  // The same packet sampled twice (sent twice): a repeated PSN is no step forward either.
  PsnSpan repeat = SpanOf({100, 100});
  EXPECT_FALSE(repeat.monotonic());
  EXPECT_EQ(EstimateSampledBytes(&repeat, 2 * 4096, 2, 100).how, SampledEstimate::kPsnUnusable);
  // A step back across the wrap (0x000003 -> 0xFFFFF0) is a step back, not 2^24 - 19 ahead.
  EXPECT_FALSE(SpanOf({0x000003, 0xFFFFF0}).monotonic());
}

TEST(PsnSpan, AbsentBthFallsBackToBytesTimesN) {
  // No PSN at all (TCP, other UDP): the builder passes no span.
  EXPECT_EQ(EstimateSampledBytes(nullptr, 3 * 1000, 3, 10).bytes, 3u * 1000 * 10);
  EXPECT_EQ(EstimateSampledBytes(nullptr, 3 * 1000, 3, 10).how, SampledEstimate::kTimesN);
  // A sample without its BTH among RoCE samples breaks the span, first or later.
  PsnSpan later;
  later.Add(true, 10);
  later.Add(false, 0);
  later.Add(true, 30);
  EXPECT_TRUE(later.any_psn());
  EXPECT_FALSE(later.monotonic());
  EXPECT_EQ(EstimateSampledBytes(&later, 3 * 4096, 3, 10).how, SampledEstimate::kPsnUnusable);
  PsnSpan first;
  first.Add(false, 0);
  EXPECT_FALSE(first.any_psn());
  first.Add(true, 30);
  EXPECT_TRUE(first.any_psn());
  EXPECT_FALSE(first.monotonic());
}

TEST(PsnSpan, ASpanTheRateCannotExplainFallsBack) {
  // Two samples 4 million packets apart at 1 in 100: the agent would have taken ~40,000 samples
  // in between. The QP was reset or reused; the PSNs do not count this flowlet's packets.
  const PsnSpan s = SpanOf({10, 4'000'010});
  EXPECT_TRUE(s.monotonic());
  EXPECT_EQ(EstimateSampledBytes(&s, 2 * 4096, 2, 100).how, SampledEstimate::kPsnUnusable);
  // 16 N per gap is still taken; just beyond it is not.
  const PsnSpan at_limit = SpanOf({0, 1600, 3200});
  const PsnSpan beyond = SpanOf({0, 1600, 3201});
  EXPECT_EQ(EstimateSampledBytes(&at_limit, 3 * 4096, 3, 100).how, SampledEstimate::kPsnSpan);
  EXPECT_EQ(EstimateSampledBytes(&beyond, 3 * 4096, 3, 100).how, SampledEstimate::kPsnUnusable);
}

// Simulated 1-in-N sampling of messages of known sizes on one QP (4096-byte MTU payloads, a
// shorter last packet, PSNs running on from a random start so they wrap), each message its own
// flowlet as the builder makes them: the PSN-span estimate against bytes x N.
struct Errors {
  double truth = 0, psn_total = 0, times_n_total = 0;
  double psn_abs = 0, times_n_abs = 0;  // sum over messages of |estimate - truth|
  double psn_sq = 0, times_n_sq = 0;    // sum over messages of (estimate - truth)^2
  int psn_used = 0;
};

template <typename NextSkip>
Errors SimulateMessages(uint32_t n, std::mt19937_64& rng, NextSkip next_skip) {
  constexpr uint32_t kMtu = 4096;
  std::uniform_int_distribution<uint64_t> message_bytes(1, 8'000'000);
  uint32_t psn = static_cast<uint32_t>(rng()) & 0xFFFFFF;
  uint64_t countdown = next_skip();  // packets to the next sample, across messages
  Errors e;
  for (int m = 0; m < 4000; ++m) {
    const uint64_t bytes = message_bytes(rng);
    const uint64_t packets = (bytes + kMtu - 1) / kMtu;
    PsnSpan span;
    uint64_t samples = 0, sampled_bytes = 0;
    for (uint64_t i = 0; i < packets; ++i, psn = (psn + 1) & 0xFFFFFF) {
      if (--countdown > 0) continue;
      countdown = next_skip();
      ++samples;
      sampled_bytes += i + 1 < packets ? kMtu : bytes - kMtu * (packets - 1);
      span.Add(true, psn);
    }
    const SampledBytes with_psn = EstimateSampledBytes(&span, sampled_bytes, samples, n);
    const SampledBytes times_n = EstimateSampledBytes(nullptr, sampled_bytes, samples, n);
    e.truth += double(bytes);
    e.psn_total += double(with_psn.bytes);
    e.times_n_total += double(times_n.bytes);
    e.psn_abs += std::abs(double(with_psn.bytes) - double(bytes));
    e.times_n_abs += std::abs(double(times_n.bytes) - double(bytes));
    e.psn_sq += std::pow(double(with_psn.bytes) - double(bytes), 2);
    e.times_n_sq += std::pow(double(times_n.bytes) - double(bytes), 2);
    e.psn_used += with_psn.how == SampledEstimate::kPsnSpan;
  }
  return e;
}

double Rms(double sum_sq) { return std::sqrt(sum_sq / 4000); }

TEST(PsnSpan, EstimatesSimulatedMessagesBetterThanBytesTimesN) {
  // A per-packet coin with probability 1/N (the skip is geometric), as switch ASICs sample.
  std::mt19937_64 rng(7);
  for (uint32_t n : {10u, 100u}) {
    SCOPED_TRACE(n);
    std::geometric_distribution<uint64_t> coin(1.0 / n);
    const Errors e = SimulateMessages(n, rng, [&] { return coin(rng) + 1; });
    EXPECT_GT(e.psn_used, 3000);
    // Both are unbiased: the totals agree with the truth within a few percent...
    EXPECT_NEAR(e.psn_total / e.truth, 1.0, 0.02);
    EXPECT_NEAR(e.times_n_total / e.truth, 1.0, 0.02);
    // ...but per message the PSN span is far closer: bytes x N errs by about sqrt(k) x N
    // packets, the span by about N whatever the number of samples k (measured: 0.14 and 0.43
    // of the root-mean-square error of bytes x N at N = 10 and 100).
    EXPECT_LT(Rms(e.psn_sq), 0.5 * Rms(e.times_n_sq));
    EXPECT_LT(e.psn_abs, 0.6 * e.times_n_abs);
  }
  // Messages of at most 2N packets (N = 1000): one or two samples each, where the span says
  // little; the estimate is still unbiased and no worse (measured RMS error 0.92 of bytes x N).
  std::geometric_distribution<uint64_t> coin(1.0 / 1000);
  const Errors e = SimulateMessages(1000, rng, [&] { return coin(rng) + 1; });
  EXPECT_NEAR(e.psn_total / e.truth, 1.0, 0.03);
  EXPECT_LT(Rms(e.psn_sq), Rms(e.times_n_sq));
}

TEST(PsnSpan, BetterWithUniformSkipsToo) {
  // Agents that draw the skip uniformly in 1..2N-1 (the simulator's sFlow agents) leave about
  // 2N/3 unseen packets at each end, not the N - 1 the estimate allows for: it counts a few
  // percent too much (measured 6% at N = 100), yet per message it is still much closer.
  std::mt19937_64 rng(11);
  for (uint32_t n : {10u, 100u}) {
    SCOPED_TRACE(n);
    std::uniform_int_distribution<uint64_t> skip(1, 2 * uint64_t{n} - 1);
    const Errors e = SimulateMessages(n, rng, [&] { return skip(rng); });
    EXPECT_GT(e.psn_total / e.truth, 1.0);
    EXPECT_LT(e.psn_total / e.truth, 1.08);
    EXPECT_LT(Rms(e.psn_sq), 0.6 * Rms(e.times_n_sq));
  }
}

}  // namespace
}  // namespace prism::ingest
