// File: ingest/packet/roce_bth.h
// InfiniBand Base Transport Header opcodes as RoCEv2 carries them (IBTA vol. 1, ch. 9.2 and
// annex A17): what each opcode means for message assembly and how many extension-header bytes
// follow the 12-byte BTH. Used by the BTH decoder (packet/decoders.cc) and the flow builder.
#pragma once

#include <cstdint>

namespace prism::ingest {

inline constexpr uint16_t kRoceV2UdpPort = 4791;
inline constexpr uint32_t kBthBytes = 12;
inline constexpr uint32_t kIcrcBytes = 4;

// Where a packet sits in its RDMA message; kNotData for ACK, CNP, READ request, atomics.
enum class MessagePart : uint8_t { kFirst, kMiddle, kLast, kOnly, kNotData };

enum class RoceKind : uint8_t {
  kData,         // SEND / RDMA WRITE / READ response packet: part of a message
  kAck,          // ACK or NAK (AETH syndrome tells which)
  kCnp,          // congestion notification (opcode 0x81)
  kReadRequest,  // carries a RETH, no payload
  kOther,        // atomics, reserved/unknown opcodes
};

struct OpcodeInfo {
  RoceKind kind = RoceKind::kOther;
  MessagePart part = MessagePart::kNotData;
  uint8_t ext_bytes = 0;  // extension headers between the BTH and the payload
  bool has_aeth = false;  // AETH is the first extension header
};

// Opcode = transport (3 high bits: RC 0, UC 1, RD 2, UD 3, CNP 4, XRC 5) | operation (5 bits).
constexpr OpcodeInfo ClassifyOpcode(uint8_t opcode) {
  if (opcode == 0x81) return {RoceKind::kCnp, MessagePart::kNotData, 16, false};
  const uint8_t transport = opcode >> 5;
  const uint8_t op = opcode & 0x1F;
  uint8_t extra = 0;  // transport-specific headers before the operation's own
  switch (transport) {
    case 0:  // RC
    case 1:  // UC
      break;
    case 2:  // RD: RDETH + DETH
      extra = 4 + 8;
      break;
    case 3:  // UD: only SEND ONLY (with immediate), DETH
      if (op == 0x04) return {RoceKind::kData, MessagePart::kOnly, 8, false};
      if (op == 0x05) return {RoceKind::kData, MessagePart::kOnly, 12, false};
      return {};
    case 5:  // XRC: XRCETH
      extra = 4;
      break;
    default:
      return {};
  }
  auto data = [&](MessagePart part, uint8_t ext) {
    return OpcodeInfo{RoceKind::kData, part, static_cast<uint8_t>(extra + ext), false};
  };
  switch (op) {
    case 0x00: return data(MessagePart::kFirst, 0);    // SEND FIRST
    case 0x01: return data(MessagePart::kMiddle, 0);   // SEND MIDDLE
    case 0x02: return data(MessagePart::kLast, 0);     // SEND LAST
    case 0x03: return data(MessagePart::kLast, 4);     // SEND LAST with ImmDt
    case 0x04: return data(MessagePart::kOnly, 0);     // SEND ONLY
    case 0x05: return data(MessagePart::kOnly, 4);     // SEND ONLY with ImmDt
    case 0x06: return data(MessagePart::kFirst, 16);   // RDMA WRITE FIRST (RETH)
    case 0x07: return data(MessagePart::kMiddle, 0);   // RDMA WRITE MIDDLE
    case 0x08: return data(MessagePart::kLast, 0);     // RDMA WRITE LAST
    case 0x09: return data(MessagePart::kLast, 4);     // RDMA WRITE LAST with ImmDt
    case 0x0A: return data(MessagePart::kOnly, 16);    // RDMA WRITE ONLY (RETH)
    case 0x0B: return data(MessagePart::kOnly, 20);    // RDMA WRITE ONLY with ImmDt
    case 0x0C:                                         // RDMA READ request (RETH)
      return {RoceKind::kReadRequest, MessagePart::kNotData, static_cast<uint8_t>(extra + 16)};
    case 0x0D: return {RoceKind::kData, MessagePart::kFirst, static_cast<uint8_t>(extra + 4), true};
    case 0x0E: return data(MessagePart::kMiddle, 0);   // READ response MIDDLE
    case 0x0F: return {RoceKind::kData, MessagePart::kLast, static_cast<uint8_t>(extra + 4), true};
    case 0x10: return {RoceKind::kData, MessagePart::kOnly, static_cast<uint8_t>(extra + 4), true};
    case 0x11:  // ACKNOWLEDGE (AETH)
      return {RoceKind::kAck, MessagePart::kNotData, static_cast<uint8_t>(extra + 4), true};
    case 0x12:  // ATOMIC ACKNOWLEDGE (AETH + AtomicAckETH)
      return {RoceKind::kAck, MessagePart::kNotData, static_cast<uint8_t>(extra + 12), true};
    case 0x16: return data(MessagePart::kLast, 4);     // SEND LAST with Invalidate (IETH)
    case 0x17: return data(MessagePart::kOnly, 4);     // SEND ONLY with Invalidate (IETH)
    default:
      return {};  // atomics (0x13, 0x14), reserved
  }
}

// AETH syndrome bits 6:5: 00 ACK, 01 RNR NAK, 11 NAK (PSN error, invalid request, ...).
constexpr bool IsNakSyndrome(uint8_t syndrome) { return (syndrome & 0x60) != 0; }

}  // namespace prism::ingest
