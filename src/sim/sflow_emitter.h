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
// Counter samples: the port polls given to AddCounterPoll (simulate takes them from
// sim/port_counter_sink.h, the same polls as `--emit counters`) are exported by the agent of the
// port's switch as counter samples with generic interface counters (cumulative 64-bit octets),
// packed by the same rule into datagrams of their own, from sub-agent 1 (the flow samples come
// from sub-agent 0), so the flow samples' datagrams are the same with or without counters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/flow_record.h"
#include "core/ip_addr.h"
#include "core/status.h"

namespace prism::sim {

struct SflowEmitOptions {
  uint32_t sampling_rate = 1000;  // 1-in-N
  uint32_t snaplen = 128;         // header bytes per sample
  uint64_t seed = 1;
  uint64_t max_samples = 20'000'000;
  uint64_t if_speed_bps = 400'000'000'000;  // ifSpeed of the counter samples' interfaces
};

// One poll of a switch port's counters: exported by the agent of switch `point` as a counter
// sample of interface `if_index`.
struct SflowCounterPoll {
  PointId point = kNoPoint;
  uint32_t if_index = 0;
  int64_t ts_ns = 0;
  uint64_t in_octets = 0, out_octets = 0;  // cumulative
};

class SflowEmitter : public FlowSink {
 public:
  explicit SflowEmitter(const SflowEmitOptions& options) : options_(options) {}
  void OnRecord(const FlowRecord& r) override { records_.push_back(r); }
  void AddCounterPoll(const SflowCounterPoll& poll) { polls_.push_back(poll); }

  // The address of the agent of observation point `point` (172.16.x.y), as its datagrams carry
  // it and `analyze` names the switch.
  static IpAddr AgentAddress(PointId point);

  // Writes the capture of export datagrams (pcap, ns timestamps, Ethernet). kInvalidArgument
  // for a bad option or more than max_samples, kDataLoss on a write error.
  Status Write(const std::string& path) const;

 private:
  SflowEmitOptions options_;
  std::vector<FlowRecord> records_;
  std::vector<SflowCounterPoll> polls_;
};

}  // namespace prism::sim
