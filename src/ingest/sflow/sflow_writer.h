// File: ingest/sflow/sflow_writer.h
// Builds sFlow v5 datagrams (the inverse of sflow/sflow_format.h): flow samples with a raw packet
// header record and counter samples with generic interface counters, as an agent sends them.
// Used by the simulator's sFlow output (`simulate --emit sflow`), the tests and the fuzzer's
// seeds, so the decoder is tested against datagrams built from the specification's layout, and
// against a real agent (pmacct's sfprobe) in the interop test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/ip_addr.h"
#include "ingest/sflow/sflow_format.h"

namespace prism::ingest {

struct SflowFlowSampleSpec {
  bool expanded = false;          // format 3 instead of 1
  uint32_t sequence = 0;
  uint32_t source_type = 0;
  uint32_t source_index = 0;
  uint32_t sampling_rate = 1;
  uint32_t sample_pool = 0;
  uint32_t drops = 0;
  uint32_t input = 0, output = 0;
  uint32_t header_protocol = kSflowHeaderEthernet;
  uint32_t frame_length = 0;      // the packet's original length
  std::span<const uint8_t> header;  // its first bytes
};

class SflowDatagramWriter {
 public:
  SflowDatagramWriter(const IpAddr& agent, uint32_t sub_agent)
      : agent_(agent), sub_agent_(sub_agent) {}

  void AddFlowSample(const SflowFlowSampleSpec& s);
  void AddCounterSample(uint32_t sequence, uint32_t source_index,
                        const SflowInterfaceCounters& c);

  size_t samples() const { return samples_; }
  // Size of the datagram Finish() would return now.
  size_t bytes() const;
  // The datagram of the samples added since the last Finish(); starts a new one.
  std::vector<uint8_t> Finish(uint32_t sequence, uint32_t uptime_ms);

 private:
  IpAddr agent_;
  uint32_t sub_agent_;
  size_t samples_ = 0;
  std::vector<uint8_t> body_;  // the samples, framed
};

}  // namespace prism::ingest
