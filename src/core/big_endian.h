// File: core/big_endian.h
// Network byte order reads for the binary decoders (IPFIX, NetFlow v9, packet headers). Callers
// check bounds first; these only assemble bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace prism {

inline uint16_t LoadBe16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t LoadBe32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline uint64_t LoadBe64(const uint8_t* p) { return (uint64_t{LoadBe32(p)} << 32) | LoadBe32(p + 4); }
// Unsigned integer of 1..8 bytes (IPFIX reduced-size encoding, RFC 7011 §6.2).
inline uint64_t LoadBeUint(const uint8_t* p, size_t len) {
  uint64_t v = 0;
  for (size_t i = 0; i < len; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace prism
