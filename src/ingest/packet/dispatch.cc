#include "ingest/packet/dispatch.h"

#include <array>

#include "ingest/packet/decoders.h"
#include "ingest/packet/roce_bth.h"

namespace prism::ingest {
namespace {

struct Entry {
  Layer layer;
  uint32_t key;
  PacketDecoder decode;
  Stat malformed;    // what DecodeStatus::kMalformed counts as for this decoder
  Stat unsupported;  // ... and DecodeStatus::kUnsupported
};

// The one place that says what follows what (docs/contributing.md, Adding an input format).
constexpr std::array<Entry, 19> kTable = {{
    {Layer::kLinkType, kLinkEthernet, DecodeEthernet, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kLinkType, kLinkRaw, DecodeRawIp, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kLinkType, 12, DecodeRawIp, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kLinkType, 14, DecodeRawIp, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kLinkType, kLinkIpv4, DecodeRawIp, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kLinkType, kLinkIpv6, DecodeRawIp, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kLinkType, kLinkLinuxSll, DecodeLinuxSll, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kLinkType, kLinkLinuxSll2, DecodeLinuxSll2, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kEtherType, kEtherIpv4, DecodeIpv4, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kEtherType, kEtherIpv6, DecodeIpv6, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kEtherType, kEtherVlan, DecodeVlan, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kEtherType, kEtherQinQ, DecodeVlan, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kEtherType, kEtherQinQOld, DecodeVlan, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kIpProto, 17, DecodeUdp, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kIpProto, 6, DecodeTcp, Stat::packet_malformed, Stat::packet_malformed},
    {Layer::kIpProto, 47, DecodeGre, Stat::packet_malformed, Stat::packet_gre_unsupported},
    {Layer::kGreProto, kEtherErspan2, DecodeErspan2, Stat::packet_malformed, Stat::packet_gre_unsupported},
    {Layer::kGreProto, kEtherErspan3, DecodeErspan3, Stat::packet_malformed, Stat::packet_gre_unsupported},
    {Layer::kUdpPort, kRoceV2UdpPort, DecodeRoceBth, Stat::roce_bad_length, Stat::roce_bad_length},
}};

// GRE carrying plain IP or Ethernet reuses the EtherType rows.
constexpr uint32_t kGreAsEtherType[] = {kEtherIpv4, kEtherIpv6, kEtherTeb};

const Entry* Find(Layer layer, uint32_t key) {
  if (layer == Layer::kGreProto) {
    for (uint32_t k : kGreAsEtherType) {
      if (k == key) {
        if (key == kEtherTeb) return Find(Layer::kLinkType, kLinkEthernet);
        return Find(Layer::kEtherType, key);
      }
    }
  }
  for (const Entry& e : kTable) {
    if (e.layer == layer && e.key == key) return &e;
  }
  return nullptr;
}

// What a lookup miss means, per layer: an unknown UDP port is plain UDP (done), an unknown
// EtherType is a non-IP frame, and so on.
std::optional<Stat> MissStat(Layer layer) {
  switch (layer) {
    case Layer::kLinkType: return Stat::packet_unsupported_link;
    case Layer::kEtherType: return Stat::packet_non_ip;
    case Layer::kIpProto: return Stat::packet_other_proto;
    case Layer::kGreProto: return Stat::packet_gre_unsupported;
    case Layer::kUdpPort:
    case Layer::kNone: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

bool IsSupportedLinkType(uint32_t link_type) {
  return Find(Layer::kLinkType, link_type) != nullptr;
}

std::optional<Stat> DecodePacket(uint32_t link_type, std::span<const uint8_t> frame,
                                 PacketMeta* meta) {
  Layer layer = Layer::kLinkType;
  uint32_t key = link_type;
  std::span<const uint8_t> data = frame;
  for (;;) {
    const Entry* e = Find(layer, key);
    if (e == nullptr) {
      if (std::optional<Stat> miss = MissStat(layer)) return miss;
      break;  // plain UDP
    }
    if (++meta->depth > kMaxHeaderDepth) return Stat::packet_too_deep;
    DecodeResult r = e->decode(data, meta);
    switch (r.status) {
      case DecodeStatus::kNext:
        break;
      case DecodeStatus::kDone:
        layer = Layer::kNone;
        break;
      case DecodeStatus::kTruncated: return Stat::packet_truncated;
      case DecodeStatus::kMalformed: return e->malformed;
      case DecodeStatus::kFragment: return Stat::packet_ip_fragment;
      case DecodeStatus::kUnsupported: return e->unsupported;
    }
    if (layer == Layer::kNone) break;
    if (r.header_bytes > data.size()) return Stat::packet_truncated;
    data = data.subspan(r.header_bytes);
    if (data.size() > r.payload_limit) data = data.first(r.payload_limit);
    layer = r.next_layer;
    key = r.next_key;
  }
  if (!meta->has_ip || !meta->has_l4) {
    // Only reachable through an unknown UDP port before any IP header, which cannot happen with
    // this table; kept so a future table row cannot hand out half-filled packets.
    return Stat::packet_malformed;
  }
  return std::nullopt;
}

}  // namespace prism::ingest
