#include "ingest/pcap/psn_span.h"

#include <algorithm>

namespace prism::ingest {
namespace {

// A forward PSN step is less than half the PSN space: a step of 2^23 or more is taken for a step
// back (the sender went back to retransmit) rather than for 2^23 packets between two samples.
constexpr uint32_t kMaxForwardStep = kPsnModulus / 2;

// At 1 in N the agent's skip between samples averages N packets. If the samples of a flowlet are
// on average more than this many times N packets apart by their PSNs, the PSNs do not count the
// packets the agent saw (the QP was reset or reused, or two senders share the destination QP):
// with a per-packet coin, one skip of 16 N has probability e^-16; agents that draw the skip from
// 1..2N-1 never skip more than 2N.
constexpr uint64_t kMaxMeanSkipInN = 16;

}  // namespace

void PsnSpan::Add(bool has_psn, uint32_t psn) {
  any_psn_ = any_psn_ || has_psn;
  if (state_ == State::kBroken) return;
  if (!has_psn) {
    state_ = State::kBroken;
    return;
  }
  psn &= kPsnModulus - 1;
  if (state_ == State::kEmpty) {
    state_ = State::kTracking;
    last_psn_ = psn;
    return;
  }
  const uint32_t step = (psn - last_psn_) & (kPsnModulus - 1);
  // A repeated PSN is the same packet sent again; a step back, a go-back-N retransmission. Either
  // way the packets between the samples are no longer the PSN difference.
  if (step == 0 || step >= kMaxForwardStep) {
    state_ = State::kBroken;
    return;
  }
  span_packets_ += step;
  last_psn_ = psn;
}

SampledBytes EstimateSampledBytes(const PsnSpan* psn, uint64_t sampled_bytes, uint64_t samples,
                                  uint32_t sampling_rate) {
  const uint64_t n = std::max<uint32_t>(1, sampling_rate);
  const SampledBytes times_n{sampled_bytes * n, SampledEstimate::kTimesN};
  // One sample has no span; bytes x N is then the unbiased figure (a message shorter than N
  // packets is sampled once with probability about its length / N).
  if (psn == nullptr || samples < 2) return times_n;
  if (!psn->monotonic() || psn->span_packets() > kMaxMeanSkipInN * n * (samples - 1)) {
    return {times_n.bytes, SampledEstimate::kPsnUnusable};
  }
  // The span_packets() + 1 packets from the first sample to the last were sent; before the first
  // and after the last, the flowlet's unsampled packets are unseen. With each packet sampled with
  // probability 1/N, N - 1 packets on average precede a sample, and as many follow the last one
  // (for a flowlet much longer than N). Counting span + 1 + 2 (N - 1) packets for two or more
  // samples and N for one sample is unbiased for any flowlet length: for M packets, E[estimate]
  // = M exactly (tested in psn_span_test.cc). Agents whose skips vary less (uniform in 1..2N-1)
  // leave about 2N/3 unseen at each end, so there this counts about 2N/3 packets too many.
  const unsigned __int128 packets = psn->span_packets() + 2 * n - 1;
  // The payload per packet is the samples' mean: every packet is equally likely to be sampled,
  // so the samples' mix of MTU-sized packets and shorter last packets is the flowlet's.
  const unsigned __int128 bytes = (packets * sampled_bytes + samples / 2) / samples;
  return {static_cast<uint64_t>(std::min<unsigned __int128>(bytes, UINT64_MAX)),
          SampledEstimate::kPsnSpan};
}

}  // namespace prism::ingest
