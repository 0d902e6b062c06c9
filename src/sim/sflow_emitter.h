// File: sim/sflow_emitter.h
// `simulate --emit sflow --sampling N`: what the switches' sFlow agents would export for the
// simulator's traffic, as a pcap of sFlow v5 export datagrams (UDP from each agent to a
// collector on port 6343), which `analyze` reads like any capture (ingest/sflow/sflow_decoder.h).
// Each record is the same RDMA WRITE message as in `--emit pcap` (sim/packet_emitter.h: segmented
// at 4096 payload bytes, packets spread evenly over the record); each observation point's agent
// samples 1 in N of the packets it sees with a random skip (uniform in 1..2N-1, as agents do so
// sampling cannot lock onto a periodic pattern) and exports each sample as a flow sample with the
// packet's first `snaplen` bytes. Samples are packed into datagrams per agent: a datagram is sent
// when it holds 8 samples or its oldest sample is 1 ms old, at the time of its last sample; the
// collector times every sample by its datagram, so sample times are late by at most 1 ms. Only the
// sampled packets are built, so large scenarios are affordable for large N; Write() refuses more
// than `max_samples`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/flow_record.h"
#include "core/status.h"

namespace prism::sim {

struct SflowEmitOptions {
  uint32_t sampling_rate = 1000;  // 1-in-N
  uint32_t snaplen = 128;         // header bytes per sample
  uint64_t seed = 1;
  uint64_t max_samples = 20'000'000;
};

class SflowEmitter : public FlowSink {
 public:
  explicit SflowEmitter(const SflowEmitOptions& options) : options_(options) {}
  void OnRecord(const FlowRecord& r) override { records_.push_back(r); }

  // Writes the capture of export datagrams (pcap, ns timestamps, Ethernet). kInvalidArgument
  // for a bad option or more than max_samples, kDataLoss on a write error.
  Status Write(const std::string& path) const;

 private:
  SflowEmitOptions options_;
  std::vector<FlowRecord> records_;
};

}  // namespace prism::sim
