// File: ingest/packet/packet_meta.h
// What the packet decoders (packet/decoders.h) learn about one captured packet, filled in layer by
// layer by the dispatch loop (packet/dispatch.h) and consumed by the flow builder
// (pcap/packet_flow_builder.h). Inner headers overwrite outer ones: after ERSPAN decapsulation the
// addresses, ports and lengths are those of the mirrored packet, and the ERSPAN fields say where it
// was observed. Every length here comes from a header field (IP total length, UDP length, TCP data
// offset), never from the captured length: mirrored and snaplen-cut packets keep their true sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "core/flow_record.h"
#include "core/ip_addr.h"

namespace prism::ingest {

// The namespaces a decoder's "what comes next" is looked up in (packet/dispatch.cc).
enum class Layer : uint8_t {
  kLinkType,   // pcap LINKTYPE_* value
  kEtherType,  // Ethernet / VLAN type field
  kIpProto,    // IPv4 protocol / IPv6 next header
  kUdpPort,    // UDP destination port
  kGreProto,   // GRE protocol type (an EtherType space of its own: 0x88BE means ERSPAN there)
  kNone,       // the decoder was the last layer
};

struct PacketMeta {
  int64_t ts_ns = 0;      // capture time, Unix epoch ns
  uint32_t wire_len = 0;  // original frame length as the capture recorded it (pcap "len")

  // Network layer (innermost).
  bool has_ip = false;
  IpAddr src, dst;
  uint8_t proto = 0;
  uint32_t l4_bytes = 0;  // IP payload length per the IP header: transport header + data

  // Transport layer (innermost).
  bool has_l4 = false;
  uint16_t src_port = 0, dst_port = 0;
  uint32_t payload_bytes = 0;  // application bytes per the length fields (UDP/TCP payload)
  uint8_t tcp_flags = 0;
  // The captured part of the UDP payload (may be shorter than payload_bytes): IPFIX/NetFlow
  // export datagrams inside a capture are decoded from here. Points into the caller's frame.
  std::span<const uint8_t> udp_payload;

  // RoCEv2 base transport header (UDP 4791).
  bool has_bth = false;
  uint8_t bth_opcode = 0;
  uint32_t dest_qp = 0;  // 24 bits
  uint32_t psn = 0;      // 24 bits
  bool has_aeth = false;  // only for ACK / READ response opcodes, when captured
  uint8_t aeth_syndrome = 0;
  uint32_t roce_payload_bytes = 0;  // RDMA payload: UDP payload - BTH - ext headers - pad - ICRC

  // ERSPAN (outermost session wins when nested; nesting is unusual).
  bool has_span = false;
  uint8_t span_version = 0;  // 1 = type II, 2 = type III
  uint16_t span_session = 0;
  IpAddr span_exporter;  // outer IP source: the switch that mirrored the packet

  // sFlow: the packet is a 1-in-`sampling_rate` sample taken by an agent (the observation point
  // `agent_point`), not a packet of a capture (sflow/sflow_decoder.h). Set by the caller.
  uint32_t sampling_rate = 1;
  bool has_agent_point = false;
  PointId agent_point = kNoPoint;

  bool gre_seq = false;  // the enclosing GRE header had a sequence number (ERSPAN II/III, not I)
  int depth = 0;         // headers decoded so far
};

// Result of one decoder.
enum class DecodeStatus : uint8_t {
  kNext,         // parsed; continue with (next_layer, next_key) at `header_bytes`
  kDone,         // parsed; nothing further to decode
  kTruncated,    // the capture ends before the fields this decoder needs
  kMalformed,    // fields inconsistent (bad IHL, length below header size, ...)
  kFragment,     // IP fragment without a transport header
  kUnsupported,  // a variant we do not parse (GRE routing, ERSPAN type I with options, ...)
};

struct DecodeResult {
  DecodeStatus status = DecodeStatus::kDone;
  Layer next_layer = Layer::kNone;
  uint32_t next_key = 0;
  size_t header_bytes = 0;  // bytes of `data` this layer used; the next layer starts there
  // For decoders that know the length of what follows from a header (IP total length): the
  // number of bytes the next layer may look at is min(captured, this).
  size_t payload_limit = std::numeric_limits<size_t>::max();
};

using PacketDecoder = DecodeResult (*)(std::span<const uint8_t> data, PacketMeta* meta);

}  // namespace prism::ingest
