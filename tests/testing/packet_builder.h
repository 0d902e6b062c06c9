// File: tests/testing/packet_builder.h
// Builds packets and captures in code for the ingest tests (after ipfixcol2's MsgGen): each
// function wraps a payload in one header, innermost first, e.g.
//   Eth(kEtherIpv4, Ipv4(a, b, 17, Udp(5000, 4791, Bth(0x06, qp, psn, 4096))))
// and PcapWriter / PcapngWriter lay frames out as files, cutting them at a snaplen.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace prism::testing {

using Bytes = std::vector<uint8_t>;

inline void Put16(Bytes* b, uint16_t v) {
  b->push_back(static_cast<uint8_t>(v >> 8));
  b->push_back(static_cast<uint8_t>(v));
}
inline void Put32(Bytes* b, uint32_t v) {
  Put16(b, static_cast<uint16_t>(v >> 16));
  Put16(b, static_cast<uint16_t>(v));
}
inline void Put64(Bytes* b, uint64_t v) {
  Put32(b, static_cast<uint32_t>(v >> 32));
  Put32(b, static_cast<uint32_t>(v));
}
inline void Append(Bytes* b, const Bytes& tail) { b->insert(b->end(), tail.begin(), tail.end()); }
inline void PutLe16(Bytes* b, uint16_t v) {
  b->push_back(static_cast<uint8_t>(v));
  b->push_back(static_cast<uint8_t>(v >> 8));
}
inline void PutLe32(Bytes* b, uint32_t v) {
  PutLe16(b, static_cast<uint16_t>(v));
  PutLe16(b, static_cast<uint16_t>(v >> 16));
}

// IPv4 address a.b.c.d in host order.
constexpr uint32_t V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return (uint32_t{a} << 24) | (uint32_t{b} << 16) | (uint32_t{c} << 8) | d;
}

// BTH + extension headers (zeros, sized per opcode by the caller's `ext_bytes`) + payload + ICRC.
inline Bytes Bth(uint8_t opcode, uint32_t dest_qp, uint32_t psn, uint32_t payload_bytes,
                 uint32_t ext_bytes = 0, uint8_t pad = 0, uint8_t first_ext_byte = 0) {
  Bytes b;
  b.push_back(opcode);
  b.push_back(static_cast<uint8_t>((pad & 3) << 4));
  Put16(&b, 0xFFFF);  // P_Key
  b.push_back(0);
  b.push_back(static_cast<uint8_t>(dest_qp >> 16));
  Put16(&b, static_cast<uint16_t>(dest_qp));
  b.push_back(0);
  b.push_back(static_cast<uint8_t>(psn >> 16));
  Put16(&b, static_cast<uint16_t>(psn));
  for (uint32_t i = 0; i < ext_bytes; ++i) b.push_back(i == 0 ? first_ext_byte : 0);
  b.resize(b.size() + payload_bytes + pad + 4, 0xAB);
  return b;
}

inline Bytes Udp(uint16_t sport, uint16_t dport, const Bytes& payload) {
  Bytes b;
  Put16(&b, sport);
  Put16(&b, dport);
  Put16(&b, static_cast<uint16_t>(8 + payload.size()));
  Put16(&b, 0);
  Append(&b, payload);
  return b;
}

inline Bytes Tcp(uint16_t sport, uint16_t dport, uint8_t flags, uint32_t payload_bytes) {
  Bytes b;
  Put16(&b, sport);
  Put16(&b, dport);
  Put32(&b, 1);
  Put32(&b, 1);
  b.push_back(5 << 4);
  b.push_back(flags);
  Put16(&b, 65535);
  Put32(&b, 0);
  b.resize(b.size() + payload_bytes, 0xCD);
  return b;
}

inline Bytes Ipv4(uint32_t src, uint32_t dst, uint8_t proto, const Bytes& payload,
                  uint16_t frag = 0) {
  Bytes b;
  b.push_back(0x45);
  b.push_back(0);
  Put16(&b, static_cast<uint16_t>(20 + payload.size()));
  Put16(&b, 1);
  Put16(&b, frag);
  b.push_back(64);
  b.push_back(proto);
  Put16(&b, 0);
  Put32(&b, src);
  Put32(&b, dst);
  Append(&b, payload);
  return b;
}

inline Bytes Ipv6(uint8_t src_last, uint8_t dst_last, uint8_t next, const Bytes& payload) {
  Bytes b;
  Put32(&b, 0x60000000);
  Put16(&b, static_cast<uint16_t>(payload.size()));
  b.push_back(next);
  b.push_back(64);
  for (int i = 0; i < 15; ++i) b.push_back(i == 0 ? 0xfd : 0);
  b.push_back(src_last);
  for (int i = 0; i < 15; ++i) b.push_back(i == 0 ? 0xfd : 0);
  b.push_back(dst_last);
  Append(&b, payload);
  return b;
}

inline Bytes Eth(uint16_t type, const Bytes& payload) {
  Bytes b = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
  Put16(&b, type);
  Append(&b, payload);
  return b;
}

// An 802.1Q / 802.1ad tag: TCI + the inner type, then the payload (goes after an Ethernet
// header of type `tpid`).
inline Bytes Vlan(uint16_t vid, uint16_t inner_type, const Bytes& payload) {
  Bytes b;
  Put16(&b, vid & 0x0FFF);
  Put16(&b, inner_type);
  Append(&b, payload);
  return b;
}

inline Bytes Gre(uint16_t proto, bool seq, const Bytes& payload) {
  Bytes b;
  Put16(&b, seq ? 0x1000 : 0);
  Put16(&b, proto);
  if (seq) Put32(&b, 7);
  Append(&b, payload);
  return b;
}

inline Bytes Erspan2(uint16_t session, const Bytes& frame) {
  Bytes b;
  Put16(&b, 0x1000 | 0);                 // ver 1, vlan 0
  Put16(&b, session & 0x3FF);            // cos 0, en 0, t 0, session
  Put32(&b, 0);                          // reserved, index
  Append(&b, frame);
  return b;
}

inline Bytes Erspan3(uint16_t session, const Bytes& frame, bool platform_subheader = false) {
  Bytes b;
  Put16(&b, 0x2000);
  Put16(&b, session & 0x3FF);
  Put32(&b, 12345);  // timestamp
  Put16(&b, 0);      // SGT
  Put16(&b, platform_subheader ? 1 : 0);  // P FT(0 = Ethernet) HWID D Gra O
  if (platform_subheader) Put64(&b, 0);
  Append(&b, frame);
  return b;
}

// A classic pcap file (ns precision, little-endian) written in memory.
class PcapWriter {
 public:
  explicit PcapWriter(uint32_t snaplen = 65535, uint32_t linktype = 1) : snaplen_(snaplen) {
    PutLe32(&out_, 0xA1B23C4D);  // ns-resolution magic
    PutLe16(&out_, 2);
    PutLe16(&out_, 4);
    PutLe32(&out_, 0);
    PutLe32(&out_, 0);
    PutLe32(&out_, snaplen);
    PutLe32(&out_, linktype);
  }
  PcapWriter& Add(int64_t ts_ns, const Bytes& frame) {
    uint32_t cap = std::min<uint32_t>(snaplen_, static_cast<uint32_t>(frame.size()));
    PutLe32(&out_, static_cast<uint32_t>(ts_ns / 1'000'000'000));
    PutLe32(&out_, static_cast<uint32_t>(ts_ns % 1'000'000'000));
    PutLe32(&out_, cap);
    PutLe32(&out_, static_cast<uint32_t>(frame.size()));
    out_.insert(out_.end(), frame.begin(), frame.begin() + cap);
    return *this;
  }
  const Bytes& bytes() const { return out_; }
  std::span<const std::byte> span() const {
    return {reinterpret_cast<const std::byte*>(out_.data()), out_.size()};
  }

 private:
  uint32_t snaplen_;
  Bytes out_;
};

// A pcapng file: section header, one interface (ns timestamps), enhanced packet blocks.
class PcapngWriter {
 public:
  explicit PcapngWriter(uint32_t snaplen = 65535, uint16_t linktype = 1) : snaplen_(snaplen) {
    Bytes shb;
    PutLe32(&shb, 0x1A2B3C4D);
    PutLe16(&shb, 1);
    PutLe16(&shb, 0);
    PutLe32(&shb, 0xFFFFFFFF);
    PutLe32(&shb, 0xFFFFFFFF);
    Block(0x0A0D0D0A, shb);
    Bytes idb;
    PutLe16(&idb, linktype);
    PutLe16(&idb, 0);
    PutLe32(&idb, snaplen);
    PutLe16(&idb, 9);  // if_tsresol: 10^-9
    PutLe16(&idb, 1);
    idb.push_back(9);
    idb.resize(idb.size() + 3, 0);
    PutLe32(&idb, 0);  // opt_endofopt
    Block(1, idb);
  }
  PcapngWriter& Add(int64_t ts_ns, const Bytes& frame) {
    uint32_t cap = std::min<uint32_t>(snaplen_, static_cast<uint32_t>(frame.size()));
    Bytes epb;
    PutLe32(&epb, 0);
    uint64_t ts = static_cast<uint64_t>(ts_ns);
    PutLe32(&epb, static_cast<uint32_t>(ts >> 32));
    PutLe32(&epb, static_cast<uint32_t>(ts));
    PutLe32(&epb, cap);
    PutLe32(&epb, static_cast<uint32_t>(frame.size()));
    epb.insert(epb.end(), frame.begin(), frame.begin() + cap);
    while (epb.size() % 4 != 0) epb.push_back(0);
    Block(6, epb);
    return *this;
  }
  const Bytes& bytes() const { return out_; }
  std::span<const std::byte> span() const {
    return {reinterpret_cast<const std::byte*>(out_.data()), out_.size()};
  }

 private:
  void Block(uint32_t type, const Bytes& body) {
    uint32_t len = static_cast<uint32_t>(12 + body.size());
    PutLe32(&out_, type);
    PutLe32(&out_, len);
    Append(&out_, body);
    PutLe32(&out_, len);
  }
  uint32_t snaplen_;
  Bytes out_;
};

}  // namespace prism::testing
