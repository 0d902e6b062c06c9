#include "ingest/sflow/sflow_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <vector>

#include <fmt/format.h>

#include "ingest/pcap/pcap_reader.h"
#include "ingest/sflow/sflow_writer.h"
#include "testing/packet_builder.h"

namespace prism::ingest {
namespace {

// The first 128 bytes of a RoCEv2 packet (Ethernet, IPv4, UDP 4791, BTH, `payload` RDMA bytes),
// as an agent samples it: the lengths in the headers stay those of the whole packet.
std::vector<uint8_t> RoceHeader(uint32_t src, uint32_t dst, uint16_t sport, uint32_t qp,
                                uint32_t payload, uint8_t opcode = 0x07) {
  using namespace prism::testing;  // NOLINT
  Bytes f = Eth(0x0800, Ipv4(src, dst, 17, Udp(sport, 4791, Bth(opcode, qp, 0, payload))));
  f.resize(std::min<size_t>(f.size(), 128));
  return f;
}

struct Collect : FlowSink {
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
  std::vector<FlowRecord> records;
};

struct SflowDecoderTest : ::testing::Test {
  Collect sink;
  PointTable points;
  Stats stats;
  PacketFlowOptions options;
  PacketFlowBuilder builder{options, &sink, &points, &stats};
  SflowDecoder decoder{"test", &builder, &points, &stats};
  const IpAddr agent = IpAddr::FromV4(0xC0A80001);  // 192.168.0.1

  // One datagram of `qps.size()` RoCE samples (one per QP, 4096 payload bytes each).
  std::vector<uint8_t> Datagram(uint32_t seq, uint32_t first_sample_seq, uint32_t rate,
                                const std::vector<uint32_t>& qps, uint32_t drops = 0) {
    SflowDatagramWriter w(agent, 0);
    uint32_t s = first_sample_seq;
    for (uint32_t qp : qps) {
      const std::vector<uint8_t> h = RoceHeader(0x0A000001, 0x0A000002, 50000, qp, 4096);
      w.AddFlowSample({.sequence = s++, .source_index = 3, .sampling_rate = rate,
                       .drops = drops, .frame_length = 4158, .header = h});
    }
    return w.Finish(seq, 1000);
  }
};

TEST_F(SflowDecoderTest, SamplesBecomeRecordsCarryingRateAndAgent) {
  decoder.DecodeDatagram(Datagram(1, 1, 1000, {7, 8}), 1'000'000);
  decoder.DecodeDatagram(Datagram(2, 3, 1000, {7}), 1'100'000);  // 0.1 ms later: same flowlet
  builder.Finish();
  decoder.Finish();
  ASSERT_EQ(sink.records.size(), 2u);
  std::sort(sink.records.begin(), sink.records.end(),
            [](const FlowRecord& a, const FlowRecord& b) { return a.qp < b.qp; });
  const FlowRecord& r = sink.records[0];
  EXPECT_EQ(r.qp, 7u);
  EXPECT_EQ(r.src.ToString(), "10.0.0.1");
  EXPECT_EQ(r.dst.ToString(), "10.0.0.2");
  EXPECT_EQ(r.dst_port, 4791);
  EXPECT_EQ(r.start_ns, 1'000'000);
  EXPECT_EQ(r.end_ns, 1'100'000);
  EXPECT_EQ(r.bytes, 2u * 4096);  // sampled bytes; transfers scale them by the rate
  EXPECT_EQ(r.packets, 2u);
  EXPECT_EQ(r.sampling_rate, 1000u);
  EXPECT_EQ(points.Name(r.point), "192.168.0.1");
  EXPECT_EQ(sink.records[1].qp, 8u);
  EXPECT_EQ(stats.Get(Stat::sflow_datagrams), 2u);
  EXPECT_EQ(stats.Get(Stat::sflow_flow_samples), 3u);
  EXPECT_EQ(stats.Get(Stat::sflow_samples_lost), 0u);
  EXPECT_EQ(stats.Get(Stat::records_read), 2u);
  EXPECT_EQ(stats.SkippedTotal(), 0u);
}

TEST_F(SflowDecoderTest, CountsLostDatagramsSamplesAndAgentDrops) {
  decoder.DecodeDatagram(Datagram(1, 1, 100, {7, 7}, /*drops=*/5), 0);
  // Datagrams 2 and 3 (samples 3..6) never arrived; the agent dropped 4 more samples meanwhile.
  decoder.DecodeDatagram(Datagram(4, 7, 100, {7}, /*drops=*/9), 1000);
  EXPECT_EQ(stats.Get(Stat::sflow_datagrams_lost), 2u);
  EXPECT_EQ(stats.Get(Stat::sflow_samples_lost), 4u);
  EXPECT_EQ(stats.Get(Stat::sflow_samples_dropped), 4u);
  // An agent restart numbers from 1 again: not loss.
  decoder.DecodeDatagram(Datagram(1, 1, 100, {7}), 2000);
  EXPECT_EQ(stats.Get(Stat::sflow_sequence_went_back), 2u);  // the datagram and the sample
  EXPECT_EQ(stats.Get(Stat::sflow_samples_lost), 4u);
  EXPECT_EQ(stats.SkippedTotal(), 8u);  // the lost and dropped samples: data loss
}

TEST_F(SflowDecoderTest, MalformedDatagramsAndSamplesAreCountedAndSkipped) {
  std::vector<uint8_t> good = Datagram(1, 1, 10, {7, 8});
  std::vector<uint8_t> cut(good.begin(), good.end() - 4);
  ::testing::internal::CaptureStderr();
  decoder.DecodeDatagram(cut, 0, /*packet=*/12);
  // The second sample's record count is a lie: the first sample is still used.
  std::vector<uint8_t> bad_sample = good;
  SflowDatagram d;
  SflowProblem p;
  ASSERT_TRUE(ParseSflowDatagram(good, &d, &p));
  bad_sample[d.samples[1].offset + 31] = 50;
  decoder.DecodeDatagram(bad_sample, 0);
  decoder.Finish();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("test: packet 12: byte "), std::string::npos) << err;
  EXPECT_NE(err.find("sFlow datagram skipped"), std::string::npos) << err;
  EXPECT_NE(err.find(fmt::format("test: byte {}: expected at most", d.samples[1].offset + 28)),
            std::string::npos)
      << err;
  EXPECT_EQ(stats.Get(Stat::sflow_bad_datagram), 1u);
  EXPECT_EQ(stats.Get(Stat::sflow_bad_sample), 1u);
  EXPECT_EQ(stats.Get(Stat::sflow_flow_samples), 1u);
  builder.Finish();
  EXPECT_EQ(sink.records.size(), 1u);
}

TEST_F(SflowDecoderTest, CounterSamplesAreCountedNotFlows) {
  SflowDatagramWriter w(agent, 0);
  SflowInterfaceCounters c;
  c.if_index = 1;
  w.AddCounterSample(1, 1, c);
  w.AddCounterSample(1, 2, c);
  decoder.DecodeDatagram(w.Finish(1, 0), 0);
  builder.Finish();
  EXPECT_EQ(stats.Get(Stat::sflow_counter_samples), 2u);
  EXPECT_EQ(stats.Get(Stat::sflow_interface_counters), 2u);
  EXPECT_TRUE(sink.records.empty());
}

TEST_F(SflowDecoderTest, UnsupportedHeaderProtocolIsCounted) {
  SflowDatagramWriter w(agent, 0);
  const std::vector<uint8_t> h = RoceHeader(1, 2, 3, 4, 100);
  w.AddFlowSample({.sequence = 1, .sampling_rate = 10, .header_protocol = 7 /* FDDI */,
                   .frame_length = 200, .header = h});
  decoder.DecodeDatagram(w.Finish(1, 0), 0);
  EXPECT_EQ(stats.Get(Stat::sflow_header_unsupported), 1u);
}

// A capture of export datagrams (any UDP port) reads like the agent's samples, through the
// pcap reader the input registry uses for `analyze` and watched directories.
TEST_F(SflowDecoderTest, CaptureOfDatagramsIsReadByThePcapReader) {
  using namespace prism::testing;  // NOLINT
  PcapWriter pcap;
  for (uint32_t seq = 1; seq <= 3; ++seq) {
    const std::vector<uint8_t> d = Datagram(seq, seq, 100, {7});
    pcap.Add(int64_t{seq} * 1'000'000,
             Eth(0x0800, Ipv4(V4(192, 168, 0, 1), V4(10, 1, 1, 1), 17,
                              Udp(40000, 9999, Bytes(d.begin(), d.end())))));
  }
  Collect records;
  Stats file_stats;
  PointTable file_points;
  auto n = ReadPcapBuffer(pcap.span(), "s.pcap", {}, &records, &file_points, &file_stats);
  ASSERT_TRUE(n) << n.error().message;
  ASSERT_EQ(records.records.size(), 1u);  // 1 ms apart: within 1 ms x 100, capped at 10 ms
  const FlowRecord& r = records.records[0];
  EXPECT_EQ(r.start_ns, 1'000'000);
  EXPECT_EQ(r.end_ns, 3'000'000);
  EXPECT_EQ(r.packets, 3u);
  EXPECT_EQ(r.sampling_rate, 100u);
  EXPECT_EQ(file_points.Name(r.point), "192.168.0.1");
  EXPECT_EQ(file_stats.Get(Stat::pcap_export_packets), 3u);
  EXPECT_EQ(file_stats.Get(Stat::sflow_flow_samples), 3u);
  EXPECT_EQ(file_stats.SkippedTotal(), 0u);
}

// The fuzzer's committed seeds ([u16 length][u8 flags][datagram]...) are well-formed sFlow: a
// real agent's export (pmacct sfprobe) and a hand-made IPv6-agent datagram with an expanded flow
// sample (IPv4 raw header) and a counter sample.
TEST_F(SflowDecoderTest, CommittedFuzzSeedsDecodeCleanly) {
  for (const char* name : {"pmacct_sfprobe.seed", "ipv6_agent_expanded_counters.seed"}) {
    std::ifstream in(std::string(PRISM_SOURCE_DIR) + "/tests/golden/ingest/sflow/" + name,
                     std::ios::binary);
    ASSERT_TRUE(in) << name;
    const std::vector<uint8_t> blob((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
    Stats seed_stats;
    SflowDecoder d(name, &builder, &points, &seed_stats);
    size_t pos = 0;
    while (pos + 3 <= blob.size()) {
      const size_t len = size_t{blob[pos]} << 8 | blob[pos + 1];
      ASSERT_LE(pos + 3 + len, blob.size()) << name;
      d.DecodeDatagram(std::span<const uint8_t>(blob.data() + pos + 3, len), 0);
      pos += 3 + len;
    }
    EXPECT_GE(seed_stats.Get(Stat::sflow_datagrams), 2u) << name;
    EXPECT_GE(seed_stats.Get(Stat::sflow_flow_samples), 2u) << name;
    EXPECT_EQ(seed_stats.Get(Stat::sflow_bad_datagram), 0u) << name;
    EXPECT_EQ(seed_stats.Get(Stat::sflow_bad_sample), 0u) << name;
    EXPECT_EQ(seed_stats.Get(Stat::packet_malformed), 0u) << name;
  }
}

}  // namespace
}  // namespace prism::ingest
