#include "ingest/packet/decoders.h"

#include <algorithm>
#include <limits>

#include "ingest/packet/roce_bth.h"

namespace prism::ingest {
namespace {

inline uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t Be24(const uint8_t* p) {
  return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
}
inline uint32_t Be32(const uint8_t* p) { return (uint32_t{Be16(p)} << 16) | Be16(p + 2); }

constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();

constexpr DecodeResult Next(Layer layer, uint32_t key, size_t header_bytes,
                            size_t limit = kNoLimit) {
  return {DecodeStatus::kNext, layer, key, header_bytes, limit};
}
constexpr DecodeResult Fail(DecodeStatus s) { return {s, Layer::kNone, 0, 0, kNoLimit}; }
constexpr DecodeResult Done(size_t header_bytes) {
  return {DecodeStatus::kDone, Layer::kNone, 0, header_bytes, kNoLimit};
}

// A new network layer starts: what inner headers fill in must not mix with outer values.
void ResetInner(PacketMeta* m) {
  m->has_ip = false;
  m->has_l4 = false;
  m->has_bth = false;
  m->has_aeth = false;
  m->l4_bytes = m->payload_bytes = m->roce_payload_bytes = 0;
  m->src_port = m->dst_port = 0;
  m->tcp_flags = 0;
  m->udp_payload = {};
  m->gre_seq = false;
}

}  // namespace

DecodeResult DecodeEthernet(std::span<const uint8_t> d, PacketMeta*) {
  if (d.size() < 14) return Fail(DecodeStatus::kTruncated);
  // Types <= 1500 are 802.3 lengths (LLC frames): looked up, found nowhere, counted as non-IP.
  return Next(Layer::kEtherType, Be16(&d[12]), 14);
}

DecodeResult DecodeVlan(std::span<const uint8_t> d, PacketMeta*) {
  if (d.size() < 4) return Fail(DecodeStatus::kTruncated);
  return Next(Layer::kEtherType, Be16(&d[2]), 4);
}

DecodeResult DecodeRawIp(std::span<const uint8_t> d, PacketMeta*) {
  if (d.empty()) return Fail(DecodeStatus::kTruncated);
  switch (d[0] >> 4) {
    case 4: return Next(Layer::kEtherType, kEtherIpv4, 0);
    case 6: return Next(Layer::kEtherType, kEtherIpv6, 0);
    default: return Fail(DecodeStatus::kMalformed);
  }
}

DecodeResult DecodeLinuxSll(std::span<const uint8_t> d, PacketMeta*) {
  if (d.size() < 16) return Fail(DecodeStatus::kTruncated);
  return Next(Layer::kEtherType, Be16(&d[14]), 16);
}

DecodeResult DecodeLinuxSll2(std::span<const uint8_t> d, PacketMeta*) {
  if (d.size() < 20) return Fail(DecodeStatus::kTruncated);
  return Next(Layer::kEtherType, Be16(&d[0]), 20);
}

DecodeResult DecodeIpv4(std::span<const uint8_t> d, PacketMeta* m) {
  if (d.size() < 20) return Fail(DecodeStatus::kTruncated);
  if ((d[0] >> 4) != 4) return Fail(DecodeStatus::kMalformed);
  const size_t ihl = size_t{d[0] & 0x0Fu} * 4;
  const size_t total = Be16(&d[2]);
  if (ihl < 20 || total < ihl) return Fail(DecodeStatus::kMalformed);
  if (d.size() < ihl) return Fail(DecodeStatus::kTruncated);
  ResetInner(m);
  m->has_ip = true;
  m->src = IpAddr::FromV4(Be32(&d[12]));
  m->dst = IpAddr::FromV4(Be32(&d[16]));
  m->proto = d[9];
  m->l4_bytes = static_cast<uint32_t>(total - ihl);
  if ((Be16(&d[6]) & 0x1FFF) != 0) return Fail(DecodeStatus::kFragment);
  return Next(Layer::kIpProto, m->proto, ihl, total - ihl);
}

DecodeResult DecodeIpv6(std::span<const uint8_t> d, PacketMeta* m) {
  if (d.size() < 40) return Fail(DecodeStatus::kTruncated);
  if ((d[0] >> 4) != 6) return Fail(DecodeStatus::kMalformed);
  size_t payload = Be16(&d[4]);
  if (payload == 0) return Fail(DecodeStatus::kMalformed);  // jumbograms are not for us
  ResetInner(m);
  m->has_ip = true;
  m->src = IpAddr::FromV6(&d[8]);
  m->dst = IpAddr::FromV6(&d[24]);
  uint8_t next = d[6];
  size_t off = 40;
  // Extension headers (RFC 8200 4): at most 8, each within the payload length.
  for (int i = 0; i < 8; ++i) {
    size_t len;
    if (next == 0 || next == 43 || next == 60) {  // hop-by-hop, routing, destination options
      if (d.size() < off + 2) return Fail(DecodeStatus::kTruncated);
      len = (size_t{d[off + 1]} + 1) * 8;
    } else if (next == 44) {  // fragment
      if (d.size() < off + 8) return Fail(DecodeStatus::kTruncated);
      len = 8;
      if ((Be16(&d[off + 2]) & 0xFFF8) != 0) {
        m->proto = d[off];
        return Fail(DecodeStatus::kFragment);
      }
    } else if (next == 51) {  // authentication header
      if (d.size() < off + 2) return Fail(DecodeStatus::kTruncated);
      len = (size_t{d[off + 1]} + 2) * 4;
    } else {
      break;
    }
    if (off - 40 + len > payload) return Fail(DecodeStatus::kMalformed);
    next = d[off];
    off += len;
  }
  m->proto = next;
  m->l4_bytes = static_cast<uint32_t>(payload - (off - 40));
  return Next(Layer::kIpProto, next, off, m->l4_bytes);
}

DecodeResult DecodeUdp(std::span<const uint8_t> d, PacketMeta* m) {
  if (d.size() < 8) return Fail(DecodeStatus::kTruncated);
  const size_t len = Be16(&d[4]);
  if (len < 8 || (m->has_ip && len > m->l4_bytes)) return Fail(DecodeStatus::kMalformed);
  m->has_l4 = true;
  m->src_port = Be16(&d[0]);
  m->dst_port = Be16(&d[2]);
  m->payload_bytes = static_cast<uint32_t>(len - 8);
  m->udp_payload = d.subspan(8, std::min(d.size() - 8, len - 8));
  return Next(Layer::kUdpPort, m->dst_port, 8, len - 8);
}

DecodeResult DecodeTcp(std::span<const uint8_t> d, PacketMeta* m) {
  if (d.size() < 14) return Fail(DecodeStatus::kTruncated);  // ports .. flags
  const size_t doff = static_cast<size_t>(d[12] >> 4) * 4;
  if (doff < 20 || doff > m->l4_bytes) return Fail(DecodeStatus::kMalformed);
  m->has_l4 = true;
  m->src_port = Be16(&d[0]);
  m->dst_port = Be16(&d[2]);
  m->tcp_flags = d[13];
  m->payload_bytes = static_cast<uint32_t>(m->l4_bytes - doff);
  return Done(doff);
}

DecodeResult DecodeGre(std::span<const uint8_t> d, PacketMeta* m) {
  if (d.size() < 4) return Fail(DecodeStatus::kTruncated);
  const uint16_t flags = Be16(&d[0]);
  // Version 0 only (1 is PPTP's enhanced GRE); the routing bit is deprecated (RFC 2784).
  if ((flags & 0x0007) != 0 || (flags & 0x4000) != 0) return Fail(DecodeStatus::kUnsupported);
  size_t len = 4;
  if (flags & 0x8000) len += 4;  // checksum + reserved
  if (flags & 0x2000) len += 4;  // key
  if (flags & 0x1000) len += 4;  // sequence number
  if (d.size() < len) return Fail(DecodeStatus::kTruncated);
  m->gre_seq = (flags & 0x1000) != 0;
  return Next(Layer::kGreProto, Be16(&d[2]), len);
}

namespace {
void EnterSpan(PacketMeta* m, uint8_t version, uint16_t session) {
  if (!m->has_span) {  // the outermost session is where the packet was observed
    m->has_span = true;
    m->span_version = version;
    m->span_session = session;
    m->span_exporter = m->src;
  }
  ResetInner(m);
}
}  // namespace

DecodeResult DecodeErspan2(std::span<const uint8_t> d, PacketMeta* m) {
  if (!m->gre_seq) {  // type I: no ERSPAN header, the mirrored frame follows the GRE header
    EnterSpan(m, 0, 0);
    return Next(Layer::kLinkType, kLinkEthernet, 0);
  }
  if (d.size() < 8) return Fail(DecodeStatus::kTruncated);
  if ((d[0] >> 4) != 1) return Fail(DecodeStatus::kUnsupported);
  EnterSpan(m, 1, static_cast<uint16_t>(((d[2] & 0x03) << 8) | d[3]));
  return Next(Layer::kLinkType, kLinkEthernet, 8);
}

DecodeResult DecodeErspan3(std::span<const uint8_t> d, PacketMeta* m) {
  if (d.size() < 12) return Fail(DecodeStatus::kTruncated);
  if ((d[0] >> 4) != 2) return Fail(DecodeStatus::kUnsupported);
  const uint16_t session = static_cast<uint16_t>(((d[2] & 0x03) << 8) | d[3]);
  const bool optional = (d[11] & 0x01) != 0;  // O bit: 8-byte platform-specific subheader
  const uint8_t frame_type = (d[10] >> 2) & 0x1F;  // 0 Ethernet, 2 IP
  const size_t len = optional ? 20 : 12;
  if (d.size() < len) return Fail(DecodeStatus::kTruncated);
  if (frame_type != 0 && frame_type != 2) return Fail(DecodeStatus::kUnsupported);
  EnterSpan(m, 2, session);
  return Next(Layer::kLinkType, frame_type == 0 ? kLinkEthernet : kLinkRaw, len);
}

DecodeResult DecodeRoceBth(std::span<const uint8_t> d, PacketMeta* m) {
  if (d.size() < kBthBytes) return Fail(DecodeStatus::kTruncated);
  const uint8_t opcode = d[0];
  const uint32_t pad = (d[1] >> 4) & 0x3;
  const OpcodeInfo info = ClassifyOpcode(opcode);
  const uint32_t overhead = kBthBytes + info.ext_bytes + kIcrcBytes + pad;
  if (m->payload_bytes < overhead) return Fail(DecodeStatus::kMalformed);
  m->has_bth = true;
  m->bth_opcode = opcode;
  m->dest_qp = Be24(&d[5]);
  m->psn = Be24(&d[9]);
  m->roce_payload_bytes = m->payload_bytes - overhead;
  m->has_aeth = false;
  // The AETH follows the BTH directly for RC; read it only when captured.
  if (info.has_aeth && (opcode >> 5) == 0 && d.size() >= kBthBytes + 4) {
    m->has_aeth = true;
    m->aeth_syndrome = d[kBthBytes];
  }
  return Done(kBthBytes);
}

}  // namespace prism::ingest
