// File: ingest/sflow/sflow_format.h
// The sFlow version 5 wire format (sflow.org, "sFlow Version 5", 2004), parsed without copying:
// a datagram header (agent address v4/v6, sub-agent, datagram sequence number, uptime) followed
// by samples, each framed as (enterprise:format, length, body). The structures that matter to
// llmprism are parsed further: flow samples (format 1) and expanded flow samples (format 3) with
// their flow records, the raw packet header record (flow format 1), counter samples (2, 4) with
// their records, and generic interface counters (counter format 1). Everything else is framed by
// its length and left alone. Parsers fill `problem` with the byte offset (from the datagram's
// start) and what was expected when the data does not fit; callers count and skip
// (sflow/sflow_decoder.h). Used by the decoder, the simulator's sFlow writer and the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/ip_addr.h"

namespace prism::ingest {

inline constexpr uint32_t kSflowVersion = 5;
inline constexpr uint16_t kSflowDefaultPort = 6343;
// Bounds no real agent reaches; they keep a hostile datagram from costing more than its size.
inline constexpr uint32_t kSflowMaxSamples = 4096;
inline constexpr uint32_t kSflowMaxRecords = 1024;

// Sample and record types: (enterprise << 12) | format, enterprise 0 (sFlow standard).
inline constexpr uint32_t kSflowFlowSample = 1;
inline constexpr uint32_t kSflowCounterSample = 2;
inline constexpr uint32_t kSflowExpandedFlowSample = 3;
inline constexpr uint32_t kSflowExpandedCounterSample = 4;
inline constexpr uint32_t kSflowRawPacketHeader = 1;      // flow record
inline constexpr uint32_t kSflowGenericIfCounters = 1;    // counter record
inline constexpr uint32_t kSflowGenericIfCountersBytes = 88;

// header_protocol values of the raw packet header record that llmprism decodes.
inline constexpr uint32_t kSflowHeaderEthernet = 1;
inline constexpr uint32_t kSflowHeaderIpv4 = 11;
inline constexpr uint32_t kSflowHeaderIpv6 = 12;

struct SflowProblem {
  size_t offset = 0;     // bytes from the start of the datagram
  std::string expected;  // "expected ..., got ..."
};

// One framed element: a sample in a datagram, or a record in a sample.
struct SflowElement {
  uint32_t type = 0;      // (enterprise << 12) | format
  size_t offset = 0;      // of the element's body, from the start of the datagram
  std::span<const uint8_t> body;
  uint32_t enterprise() const { return type >> 12; }
  uint32_t format() const { return type & 0xFFF; }
};

struct SflowDatagram {
  IpAddr agent;             // unspecified (::) when the agent sent address type 0
  uint32_t sub_agent = 0;
  uint32_t sequence = 0;    // per (agent, sub-agent), +1 per datagram
  uint32_t uptime_ms = 0;
  std::vector<SflowElement> samples;
};

struct SflowFlowSample {
  bool expanded = false;       // format 3 (source id and interfaces as full 32-bit words)
  uint32_t sequence = 0;       // per source, +1 per flow sample generated
  uint32_t source_type = 0;    // 0 = ifIndex, 1 = VLAN, 2 = physical entity
  uint32_t source_index = 0;
  uint32_t sampling_rate = 0;  // 1-in-N
  uint32_t sample_pool = 0;    // packets that could have been sampled (wraps at 2^32)
  uint32_t drops = 0;          // samples dropped for lack of resources (cumulative)
  uint32_t input = 0, output = 0;
  std::vector<SflowElement> records;
};

struct SflowCounterSample {
  bool expanded = false;
  uint32_t sequence = 0;
  uint32_t source_type = 0;
  uint32_t source_index = 0;
  std::vector<SflowElement> records;
};

// Flow record format 1.
struct SflowRawHeader {
  uint32_t protocol = 0;      // header_protocol: 1 Ethernet, 11 IPv4, 12 IPv6, ...
  uint32_t frame_length = 0;  // the sampled packet's original length
  uint32_t stripped = 0;      // bytes removed before the header (e.g. FCS)
  std::span<const uint8_t> header;
};

// Counter record format 1.
struct SflowInterfaceCounters {
  uint32_t if_index = 0, if_type = 0;
  uint64_t if_speed = 0;
  uint32_t if_direction = 0, if_status = 0;
  uint64_t in_octets = 0;
  uint32_t in_ucast_pkts = 0, in_multicast_pkts = 0, in_broadcast_pkts = 0, in_discards = 0,
           in_errors = 0, in_unknown_protos = 0;
  uint64_t out_octets = 0;
  uint32_t out_ucast_pkts = 0, out_multicast_pkts = 0, out_broadcast_pkts = 0, out_discards = 0,
           out_errors = 0;
  uint32_t promiscuous_mode = 0;
};

// The header and the framing of every sample; false (with `problem`) when the datagram is not
// sFlow v5 or a sample runs past its end. Sample bodies are not looked into.
bool ParseSflowDatagram(std::span<const uint8_t> data, SflowDatagram* out, SflowProblem* problem);

// Sample bodies; `sample` must be of the matching type. Records are framed, not parsed.
bool ParseFlowSample(const SflowElement& sample, SflowFlowSample* out, SflowProblem* problem);
bool ParseCounterSample(const SflowElement& sample, SflowCounterSample* out,
                        SflowProblem* problem);
bool ParseRawHeader(const SflowElement& record, SflowRawHeader* out, SflowProblem* problem);
bool ParseInterfaceCounters(const SflowElement& record, SflowInterfaceCounters* out,
                            SflowProblem* problem);

// True when `payload` (a UDP payload of `udp_payload_bytes` on the wire) starts like an sFlow v5
// datagram: version 5, agent address type 1 or 2, a sample count it can hold, and nothing cut by
// the capture. Cheap: used on every UDP datagram of a capture.
bool LooksLikeSflowDatagram(std::span<const uint8_t> payload, size_t udp_payload_bytes);

}  // namespace prism::ingest
