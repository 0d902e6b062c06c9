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

// A capture of one 20-packet RDMA WRITE (plain Ethernet / IPv4 / UDP, every header captured),
// where each frame starts, and what the reader makes of it intact.
struct WriteCapture {
  Bytes bytes;
  std::vector<size_t> frame_at;
  uint32_t frame_bytes = 0;  // captured bytes per frame
  std::vector<FlowRecord> records;
};

WriteCapture MakeWriteCapture() {
  WriteCapture c;
  PcapWriter p(128);
  AddWrite(&p, 1'000'000'000, 3, 20 * 4096);
  c.bytes = p.bytes();
  c.frame_bytes = 128;
  for (size_t i = 0; i < 20; ++i) c.frame_at.push_back(24 + i * (16 + 128) + 16);
  Collect sink;
  PointTable points;
  Stats stats;
  auto n = ReadPcapBuffer({reinterpret_cast<const std::byte*>(c.bytes.data()), c.bytes.size()},
                          "w.pcap", {}, &sink, &points, &stats);
  EXPECT_TRUE(n.has_value());
  c.records = sink.records;
  return c;
}

struct Outcome {
  StatusOr<uint64_t> n;
  std::vector<FlowRecord> records;
  Stats stats;
};

Outcome Read(const Bytes& b) {
  Outcome o;
  Collect sink;
  PointTable points;
  o.n = ReadPcapBuffer({reinterpret_cast<const std::byte*>(b.data()), b.size()}, "r.pcap", {},
                       &sink, &points, &o.stats);
  o.records = std::move(sink.records);
  return o;
}

// What holds whatever the bytes: the result agrees with what was delivered, an error says why,
// and no record claims more than the packets read could carry (every length comes from a 16-bit
// header field) or ends before it starts.
void ExpectConsistent(const Outcome& o) {
  if (o.n.has_value()) {
    EXPECT_EQ(*o.n, o.records.size());
    EXPECT_GT(*o.n, 0u);
  } else {
    EXPECT_TRUE(o.records.empty());
    EXPECT_THAT(o.n.error().message, HasSubstr("r.pcap: no flow record from"));
  }
  const uint64_t packets = o.stats.Get(Stat::pcap_packets);
  EXPECT_LE(o.records.size(), packets);
  uint64_t bytes = 0;
  for (const FlowRecord& r : o.records) {
    EXPECT_LE(r.start_ns, r.end_ns);
    EXPECT_GE(r.sampling_rate, 1u);
    bytes += r.bytes;
  }
  EXPECT_LE(bytes, packets * 65535);
}

// Bytes no decoder reads — MAC addresses, IPv4 TOS, id, TTL and checksum, the UDP checksum, the
// BTH's P_Key, reserved bits and PSN, the RETH and the payload — change nothing: the same record,
// field for field, and no counter moves.
TEST(PcapReader, BytesNoDecoderReadsChangeNothing) {
  const WriteCapture c = MakeWriteCapture();
  ASSERT_EQ(c.records.size(), 1u);
  EXPECT_EQ(c.records[0].bytes, 20u * 4096);
  std::vector<size_t> unread;
  for (size_t off = 0; off < c.frame_bytes; ++off) {
    const bool read = (off >= 12 && off <= 14) || (off >= 16 && off <= 17) ||
                      (off >= 20 && off <= 21) || off == 23 || (off >= 26 && off <= 39) ||
                      (off >= 42 && off <= 43) || (off >= 47 && off <= 49);
    if (!read) unread.push_back(off);
  }
  const Outcome intact = Read(c.bytes);
  std::mt19937 rng(1);
  for (int iter = 0; iter < 300; ++iter) {
    Bytes b = c.bytes;
    for (int k = 0; k < 12; ++k) {
      b[c.frame_at[rng() % c.frame_at.size()] + unread[rng() % unread.size()]] ^=
          static_cast<uint8_t>(1 + rng() % 255);
    }
    const Outcome o = Read(b);
    ASSERT_TRUE(o.n.has_value()) << o.n.error().message;
    ASSERT_EQ(o.records.size(), 1u);
    const FlowRecord& r = o.records[0];
    const FlowRecord& want = c.records[0];
    EXPECT_EQ(r.start_ns, want.start_ns);
    EXPECT_EQ(r.end_ns, want.end_ns);
    EXPECT_EQ(r.src, want.src);
    EXPECT_EQ(r.dst, want.dst);
    EXPECT_EQ(r.bytes, want.bytes);
    EXPECT_EQ(r.packets, want.packets);
    EXPECT_EQ(r.qp, want.qp);
    EXPECT_EQ(o.stats.values(), intact.stats.values());
  }
}

// Corrupted headers with the capture's framing intact: all 20 packets are read, and a record's
// times come from the (untouched) packet timestamps.
TEST(PcapReader, CorruptHeadersAreDecodedOrCounted) {
  const WriteCapture c = MakeWriteCapture();
  std::mt19937 rng(2);
  size_t delivered = 0;
  for (int iter = 0; iter < 300; ++iter) {
    Bytes b = c.bytes;
    for (int k = 0; k < 4; ++k) {
      b[c.frame_at[rng() % c.frame_at.size()] + rng() % 70] = static_cast<uint8_t>(rng());
    }
    const Outcome o = Read(b);
    ExpectConsistent(o);
    EXPECT_EQ(o.stats.Get(Stat::pcap_packets), 20u);
    EXPECT_EQ(o.stats.Get(Stat::pcap_file_truncated), 0u);
    for (const FlowRecord& r : o.records) {
      EXPECT_GE(r.start_ns, 1'000'000'000);
      EXPECT_LE(r.end_ns, 1'000'000'000 + 19 * 100);
    }
    delivered += o.records.size();
  }
  EXPECT_GT(delivered, 100u);  // most corruptions leave some of the message decodable
}

// Corruption anywhere after the file header, record headers included (a capture cut or
// garbled mid-file): never more records than packets read, never a record that ends before it
// starts, and a cut capture is counted.
TEST(PcapReader, RandomCorruptionAnywhereKeepsTheInvariants) {
  PcapWriter p(96);
  AddWrite(&p, 1'000'000'000, 3, 20 * 4096, true);
  std::mt19937 rng(1);
  size_t failed = 0, truncated = 0;
  for (int iter = 0; iter < 300; ++iter) {
    Bytes b = p.bytes();
    for (int k = 0; k < 8; ++k) b[24 + rng() % (b.size() - 24)] = static_cast<uint8_t>(rng());
    ::testing::internal::CaptureStderr();
    const Outcome o = Read(b);
    ::testing::internal::GetCapturedStderr();
    ExpectConsistent(o);
    failed += !o.n.has_value();
    truncated += o.stats.Get(Stat::pcap_file_truncated) > 0;
  }
  EXPECT_LT(failed, 300u);
  EXPECT_GT(truncated, 0u);  // garbled record lengths do cut captures short, and are counted
}

}  // namespace
}  // namespace prism::ingest
