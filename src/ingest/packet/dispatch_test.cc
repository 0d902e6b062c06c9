#include "ingest/packet/dispatch.h"

#include <gtest/gtest.h>

#include "ingest/packet/decoders.h"
#include "testing/packet_builder.h"

namespace prism::ingest {
namespace {

using namespace prism::testing;  // NOLINT

std::optional<Stat> Decode(const Bytes& frame, PacketMeta* m, size_t caplen = SIZE_MAX,
                           uint32_t link = kLinkEthernet) {
  std::span<const uint8_t> s(frame.data(), std::min(frame.size(), caplen));
  return DecodePacket(link, s, m);
}

TEST(Dispatch, RoceWriteFirstLengthsFromHeadersNotCaplen) {
  Bytes f = Eth(kEtherIpv4, Ipv4(V4(10, 0, 0, 1), V4(10, 0, 0, 2), 17,
                                 Udp(50000, 4791, Bth(0x06, 0x123456, 7, 4096, 16))));
  PacketMeta m;
  ASSERT_EQ(Decode(f, &m, 128), std::nullopt);  // cut at 128 bytes like a switch mirror
  EXPECT_TRUE(m.has_bth);
  EXPECT_EQ(m.bth_opcode, 0x06);
  EXPECT_EQ(m.dest_qp, 0x123456u);
  EXPECT_EQ(m.psn, 7u);
  EXPECT_EQ(m.roce_payload_bytes, 4096u);
  EXPECT_EQ(m.src, IpAddr::FromV4(V4(10, 0, 0, 1)));
  EXPECT_EQ(m.src_port, 50000);
  EXPECT_EQ(m.dst_port, 4791);
}

TEST(Dispatch, PadCountAndImmediateAreNotPayload) {
  Bytes f = Eth(kEtherIpv4, Ipv4(1, 2, 17, Udp(1, 4791, Bth(0x0B, 9, 0, 61, 20, 3))));
  PacketMeta m;
  ASSERT_EQ(Decode(f, &m), std::nullopt);
  EXPECT_EQ(m.roce_payload_bytes, 61u);
}

TEST(Dispatch, QinQAndIpv6) {
  Bytes inner = Ipv6(1, 2, 17, Udp(7, 4791, Bth(0x04, 5, 0, 100)));
  Bytes f = Eth(kEtherQinQ, Vlan(10, kEtherVlan, Vlan(20, kEtherIpv6, inner)));
  PacketMeta m;
  ASSERT_EQ(Decode(f, &m), std::nullopt);
  EXPECT_FALSE(m.src.is_v4());
  EXPECT_EQ(m.roce_payload_bytes, 100u);
  EXPECT_EQ(m.depth, 6);  // eth, vlan, vlan, ipv6, udp, bth
}

TEST(Dispatch, TcpPayloadFromIpLength) {
  Bytes f = Eth(kEtherIpv4, Ipv4(1, 2, 6, Tcp(1000, 2000, 0x18, 1448)));
  PacketMeta m;
  ASSERT_EQ(Decode(f, &m, 60), std::nullopt);
  EXPECT_EQ(m.payload_bytes, 1448u);
  EXPECT_EQ(m.tcp_flags, 0x18);
  EXPECT_FALSE(m.has_bth);
}

TEST(Dispatch, ErspanIIAndIIIDecapsulate) {
  Bytes inner = Eth(kEtherIpv4, Ipv4(V4(10, 0, 0, 1), V4(10, 0, 0, 2), 17,
                                     Udp(1, 4791, Bth(0x0A, 77, 0, 2048, 16))));
  for (int version : {2, 3}) {
    for (bool sub : {false, true}) {
      if (version == 2 && sub) continue;
      Bytes span = version == 2 ? Erspan2(5, inner) : Erspan3(9, inner, sub);
      Bytes f = Eth(kEtherIpv4, Ipv4(V4(192, 168, 0, 1), V4(192, 168, 0, 2), 47,
                                     Gre(version == 2 ? kEtherErspan2 : kEtherErspan3, true, span)));
      PacketMeta m;
      ASSERT_EQ(Decode(f, &m, 128), std::nullopt) << version;
      EXPECT_TRUE(m.has_span);
      EXPECT_EQ(m.span_session, version == 2 ? 5 : 9);
      EXPECT_EQ(m.span_exporter, IpAddr::FromV4(V4(192, 168, 0, 1)));
      EXPECT_EQ(m.src, IpAddr::FromV4(V4(10, 0, 0, 1)));
      EXPECT_EQ(m.dest_qp, 77u);
      EXPECT_EQ(m.roce_payload_bytes, 2048u);
    }
  }
}

TEST(Dispatch, ErspanTypeIWithoutSequence) {
  Bytes inner = Eth(kEtherIpv4, Ipv4(3, 4, 6, Tcp(1, 2, 0x10, 10)));
  Bytes f = Eth(kEtherIpv4, Ipv4(1, 2, 47, Gre(kEtherErspan2, false, inner)));
  PacketMeta m;
  ASSERT_EQ(Decode(f, &m), std::nullopt);
  EXPECT_TRUE(m.has_span);
  EXPECT_EQ(m.span_version, 0);
  EXPECT_EQ(m.src, IpAddr::FromV4(3));
}

TEST(Dispatch, SkipReasons) {
  PacketMeta m;
  Bytes roce = Eth(kEtherIpv4, Ipv4(1, 2, 17, Udp(1, 4791, Bth(0x06, 1, 0, 10, 16))));
  EXPECT_EQ(Decode(roce, &m, 20), Stat::packet_truncated);  // inside the IP header
  m = {};
  EXPECT_EQ(Decode(roce, &m, 14 + 20 + 8 + 6), Stat::packet_truncated);  // inside the BTH
  m = {};
  Bytes arp = Eth(0x0806, Bytes(28, 0));
  EXPECT_EQ(Decode(arp, &m), Stat::packet_non_ip);
  m = {};
  Bytes icmp = Eth(kEtherIpv4, Ipv4(1, 2, 1, Bytes(8, 0)));
  EXPECT_EQ(Decode(icmp, &m), Stat::packet_other_proto);
  m = {};
  Bytes frag = Eth(kEtherIpv4, Ipv4(1, 2, 17, Bytes(40, 0), 0x0010));
  EXPECT_EQ(Decode(frag, &m), Stat::packet_ip_fragment);
  m = {};
  Bytes short_bth = Eth(kEtherIpv4, Ipv4(1, 2, 17, Udp(1, 4791, Bytes(14, 0))));
  EXPECT_EQ(Decode(short_bth, &m), Stat::roce_bad_length);
  m = {};
  Bytes bad_udp = Eth(kEtherIpv4, Ipv4(1, 2, 17, Udp(1, 2, Bytes(10, 0))));
  bad_udp[14 + 20 + 4] = 0xFF;  // UDP length beyond the IP payload
  EXPECT_EQ(Decode(bad_udp, &m), Stat::packet_malformed);
  m = {};
  EXPECT_EQ(Decode(roce, &m, SIZE_MAX, 147), Stat::packet_unsupported_link);
  m = {};
  Bytes gre_ppp = Eth(kEtherIpv4, Ipv4(1, 2, 47, Gre(0x880B, false, Bytes(10, 0))));
  EXPECT_EQ(Decode(gre_ppp, &m), Stat::packet_gre_unsupported);
}

TEST(Dispatch, NestingIsBounded) {
  // ERSPAN inside ERSPAN inside ... : the depth limit stops it.
  Bytes f = Eth(kEtherIpv4, Ipv4(1, 2, 6, Tcp(1, 2, 0x10, 1)));
  for (int i = 0; i < 5; ++i) {
    f = Eth(kEtherIpv4, Ipv4(1, 2, 47, Gre(kEtherErspan2, true, Erspan2(1, f))));
  }
  PacketMeta m;
  EXPECT_EQ(Decode(f, &m), Stat::packet_too_deep);
}

TEST(Dispatch, RawIpAndLinuxSll) {
  Bytes ip = Ipv4(1, 2, 17, Udp(5, 6, Bytes(3, 0)));
  PacketMeta m;
  ASSERT_EQ(Decode(ip, &m, SIZE_MAX, kLinkRaw), std::nullopt);
  EXPECT_EQ(m.payload_bytes, 3u);
  Bytes sll(14, 0);
  Put16(&sll, kEtherIpv4);
  Append(&sll, ip);
  m = {};
  ASSERT_EQ(Decode(sll, &m, SIZE_MAX, kLinkLinuxSll), std::nullopt);
  EXPECT_EQ(m.dst_port, 6);
}

TEST(Dispatch, EveryPrefixOfEveryFrameIsSafe) {
  std::vector<Bytes> frames = {
      Eth(kEtherIpv4, Ipv4(1, 2, 47, Gre(kEtherErspan3, true,
          Erspan3(3, Eth(kEtherVlan, Vlan(1, kEtherIpv6, Ipv6(1, 2, 17,
              Udp(1, 4791, Bth(0x11, 1, 1, 0, 4))))), true)))),
      Eth(kEtherIpv4, Ipv4(1, 2, 6, Tcp(1, 2, 0x10, 0))),
  };
  for (const Bytes& f : frames) {
    for (size_t n = 0; n <= f.size(); ++n) {
      PacketMeta m;
      (void)Decode(f, &m, n);
    }
  }
}

}  // namespace
}  // namespace prism::ingest
