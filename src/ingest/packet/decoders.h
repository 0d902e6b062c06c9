// File: ingest/packet/decoders.h
// One free function per header type. Each reads its header from the front of `data` (the captured
// bytes from this header on, cut to what the enclosing header says it carries), fills its part of
// PacketMeta and says which (layer, key) comes next; none of them knows what follows it: the table
// in packet/dispatch.cc chains them (docs/contributing.md, Adding an input format). Bounds are
// checked against the captured bytes; sizes are taken from length fields only.
#pragma once

#include <cstdint>
#include <span>

#include "ingest/packet/packet_meta.h"

namespace prism::ingest {

// pcap LINKTYPE_* values we decode.
inline constexpr uint32_t kLinkEthernet = 1;
inline constexpr uint32_t kLinkRaw = 101;     // also 12 and 14 on some systems
inline constexpr uint32_t kLinkIpv4 = 228;
inline constexpr uint32_t kLinkIpv6 = 229;
inline constexpr uint32_t kLinkLinuxSll = 113;
inline constexpr uint32_t kLinkLinuxSll2 = 276;

inline constexpr uint16_t kEtherIpv4 = 0x0800;
inline constexpr uint16_t kEtherIpv6 = 0x86DD;
inline constexpr uint16_t kEtherVlan = 0x8100;
inline constexpr uint16_t kEtherQinQ = 0x88A8;
inline constexpr uint16_t kEtherQinQOld = 0x9100;
inline constexpr uint16_t kEtherTeb = 0x6558;      // transparent Ethernet bridging (GRE)
inline constexpr uint16_t kEtherErspan2 = 0x88BE;  // ERSPAN type I (no GRE seq) / II
inline constexpr uint16_t kEtherErspan3 = 0x22EB;

DecodeResult DecodeEthernet(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeRawIp(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeLinuxSll(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeLinuxSll2(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeVlan(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeIpv4(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeIpv6(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeUdp(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeTcp(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeGre(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeErspan2(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeErspan3(std::span<const uint8_t> data, PacketMeta* meta);
DecodeResult DecodeRoceBth(std::span<const uint8_t> data, PacketMeta* meta);

}  // namespace prism::ingest
