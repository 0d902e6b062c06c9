// File: ingest/packet/dispatch.h
// Decodes one captured frame by chaining the header decoders of packet/decoders.h through one
// table (packet/dispatch.cc): (layer, key) -> decoder, e.g. (UDP port, 4791) -> RoCE BTH,
// (GRE protocol, 0x88BE) -> ERSPAN II, (link type, 1) -> Ethernet. Adding a protocol is one table
// row. Used by the pcap reader (pcap/pcap_reader.h); no Status, no allocation (fuzzed directly).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "core/stats.h"
#include "ingest/packet/packet_meta.h"

namespace prism::ingest {

inline constexpr int kMaxHeaderDepth = 12;

// Decodes `frame` (captured bytes) of pcap link type `link_type` into `meta` (whose ts_ns and
// wire_len the caller sets). Returns nullopt when `meta` holds an IP packet with a transport
// header, ready for the flow builder; else the counter that says why the packet is not usable.
std::optional<Stat> DecodePacket(uint32_t link_type, std::span<const uint8_t> frame,
                                 PacketMeta* meta);

// True when the table has a decoder for this pcap link type (checked once per capture).
bool IsSupportedLinkType(uint32_t link_type);

}  // namespace prism::ingest
