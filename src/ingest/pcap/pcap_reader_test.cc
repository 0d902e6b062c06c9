#include "ingest/pcap/pcap_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ingest/packet/decoders.h"
#include "testing/packet_builder.h"

namespace prism::ingest {
namespace {

using namespace prism::testing;  // NOLINT
using ::testing::HasSubstr;

struct Collect : FlowSink {
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
  std::vector<FlowRecord> records;
};

// One RDMA WRITE of `bytes` on `qp`, segmented at 4096, packets 100 ns apart.
template <typename W>
void AddWrite(W* w, int64_t t0, uint32_t qp, uint32_t bytes, bool erspan = false) {
  uint32_t n = (bytes + 4095) / 4096;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t len = i + 1 < n ? 4096 : bytes - 4096 * i;
    uint8_t op = n == 1 ? 0x0A : i == 0 ? 0x06 : i + 1 == n ? 0x08 : 0x07;
    uint32_t ext = (op == 0x06 || op == 0x0A) ? 16 : 0;
    Bytes f = Eth(kEtherIpv4, Ipv4(V4(10, 0, 0, 1), V4(10, 0, 1, 1), 17,
                                   Udp(49152, 4791, Bth(op, qp, i, len, ext))));
    if (erspan) {
      f = Eth(kEtherIpv4, Ipv4(V4(192, 168, 0, 9), V4(192, 168, 0, 10), 47,
                               Gre(kEtherErspan3, true, Erspan3(4, f))));
    }
    w->Add(t0 + 100 * i, f);
  }
}

TEST(PcapReader, SnaplenCutCaptureKeepsTrueBytes) {
  for (bool ng : {false, true}) {
    for (bool erspan : {false, true}) {
      PcapWriter p(128);
      PcapngWriter png(128);
      const int64_t t0 = 1'700'000'000'000'000'000;
      if (ng) {
        AddWrite(&png, t0, 11, 1 << 20, erspan);
        AddWrite(&png, t0 + 500'000, 12, 64, erspan);
      } else {
        AddWrite(&p, t0, 11, 1 << 20, erspan);
        AddWrite(&p, t0 + 500'000, 12, 64, erspan);
      }
      Collect sink;
      PointTable points;
      Stats stats;
      auto n = ReadPcapBuffer(ng ? png.span() : p.span(), "t.pcap", {}, &sink, &points, &stats);
      ASSERT_TRUE(n) << n.error().message;
      ASSERT_EQ(*n, 2u);
      EXPECT_EQ(sink.records[0].bytes, 1u << 20);
      EXPECT_EQ(sink.records[0].packets, 256u);
      EXPECT_EQ(sink.records[0].start_ns, t0);
      EXPECT_EQ(sink.records[0].end_ns, t0 + 255 * 100);
      EXPECT_EQ(sink.records[1].bytes, 64u);
      EXPECT_EQ(stats.Get(Stat::pcap_packets), 257u);
      EXPECT_EQ(stats.SkippedTotal(), 0u);
      if (erspan) {
        EXPECT_EQ(points.Name(sink.records[0].point), "192.168.0.9/erspan-4");
        EXPECT_EQ(stats.Get(Stat::erspan_packets), 257u);
      }
    }
  }
}

TEST(PcapReader, TruncatedFileKeepsWhatCameBefore) {
  PcapWriter p;
  AddWrite(&p, 1'000'000'000, 3, 3 * 4096);
  AddWrite(&p, 2'000'000'000, 4, 3 * 4096);
  Bytes cut(p.bytes().begin(), p.bytes().end() - 100);
  Collect sink;
  PointTable points;
  Stats stats;
  auto n = ReadPcapBuffer({reinterpret_cast<const std::byte*>(cut.data()), cut.size()}, "c.pcap",
                          {}, &sink, &points, &stats);
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(stats.Get(Stat::pcap_file_truncated), 1u);
  EXPECT_EQ(sink.records[0].bytes, 3u * 4096);
}

TEST(PcapReader, UnusableFilesAreErrors) {
  Collect sink;
  PointTable points;
  Stats stats;
  Bytes junk(100, 0x42);
  auto bad = ReadPcapBuffer({reinterpret_cast<const std::byte*>(junk.data()), junk.size()},
                            "j.pcap", {}, &sink, &points, &stats);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("j.pcap"));
  PcapWriter arp_only;
  arp_only.Add(1, Eth(0x0806, Bytes(28, 0)));
  auto none = ReadPcapBuffer(arp_only.span(), "a.pcap", {}, &sink, &points, &stats);
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message, HasSubstr("no flow record from 1 packets"));
  PcapWriter usb(65535, 189);
  usb.Add(1, Bytes(10, 0));
  auto link = ReadPcapBuffer(usb.span(), "u.pcap", {}, &sink, &points, &stats);
  ASSERT_FALSE(link);
  EXPECT_THAT(link.error().message, HasSubstr("link type 189"));
  auto missing = ReadPcapFile("/nonexistent/x.pcap", {}, &sink, &points, &stats);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(PcapReader, RandomCorruptionNeverCrashes) {
  PcapWriter p(96);
  AddWrite(&p, 1'000'000'000, 3, 20 * 4096, true);
  std::mt19937 rng(1);
  for (int iter = 0; iter < 300; ++iter) {
    Bytes b = p.bytes();
    for (int k = 0; k < 8; ++k) b[24 + rng() % (b.size() - 24)] = static_cast<uint8_t>(rng());
    Collect sink;
    PointTable points;
    Stats stats;
    (void)ReadPcapBuffer({reinterpret_cast<const std::byte*>(b.data()), b.size()}, "r.pcap", {},
                         &sink, &points, &stats);
  }
}

}  // namespace
}  // namespace prism::ingest
