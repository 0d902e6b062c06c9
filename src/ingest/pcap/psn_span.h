// File: ingest/pcap/psn_span.h
// The byte estimate of a sampled RoCEv2 flowlet from the BTH packet sequence numbers (PSN) of its
// samples. PacketFlowBuilder (pcap/packet_flow_builder.h) feeds every sample of a 1-in-N sampled
// flowlet (sFlow) to a PsnSpan in arrival order and, when the flowlet closes, asks
// EstimateSampledBytes what traffic the record stands for.
//
// Why: a flowlet's samples alone say "k samples x N packets", whose error is about sqrt(k) x N
// packets. On a reliable-connected QP the PSN counts every packet sent, so the first and last
// samples' PSNs give the exact number of packets between them; only the packets before the first
// and after the last sample are unknown, an error of about N packets whatever k is. Where the
// PSN cannot be trusted (no BTH, a PSN that repeats or goes back: a retransmission, READ
// responses and sends of the other PSN space sharing a destination QP; a span the sampling rate
// cannot explain: a QP reset or reused) the flowlet keeps bytes x N.
#pragma once

#include <cstdint>

namespace prism::ingest {

inline constexpr uint32_t kPsnModulus = 1u << 24;  // BTH PSN: 24 bits, wrapping

class PsnSpan {
 public:
  // One sample of the flowlet, in arrival order; `has_psn` false for a sample without a BTH.
  void Add(bool has_psn, uint32_t psn);

  // Some sample had a PSN (a RoCEv2 flowlet): the estimate is worth trying.
  bool any_psn() const { return any_psn_; }
  // Every sample so far had a PSN, each ahead of the previous one (modulo 2^24).
  bool monotonic() const { return state_ == State::kTracking; }
  // Packets from the first sample to the last, both excluded from the count of the first: the
  // sum of the forward PSN steps (so a flowlet may span more than 2^24 packets if its samples
  // are never more than 2^23 apart). 0 for a single sample.
  uint64_t span_packets() const { return span_packets_; }

 private:
  enum class State : uint8_t { kEmpty, kTracking, kBroken };
  State state_ = State::kEmpty;
  bool any_psn_ = false;
  uint32_t last_psn_ = 0;
  uint64_t span_packets_ = 0;
};

// How a sampled flowlet's bytes were estimated (PacketFlowBuilder counts them).
enum class SampledEstimate : uint8_t {
  kTimesN,         // bytes x N: one sample, or not RoCE
  kPsnSpan,        // from the PSN span
  kPsnUnusable,    // two or more RoCE samples, but the PSNs could not be used: bytes x N
};

struct SampledBytes {
  uint64_t bytes = 0;  // the traffic the flowlet stands for
  SampledEstimate how = SampledEstimate::kTimesN;
};

// The bytes a flowlet of `samples` samples taken 1 in `sampling_rate`, carrying `sampled_bytes`
// of payload in all, stands for. `psn` is null for flows without PSNs (TCP, other UDP).
SampledBytes EstimateSampledBytes(const PsnSpan* psn, uint64_t sampled_bytes, uint64_t samples,
                                  uint32_t sampling_rate);

}  // namespace prism::ingest
