#include "ingest/pcap/packet_flow_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace prism::ingest {
namespace {

struct Collect : FlowSink {
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
  std::vector<FlowRecord> records;
};

PacketMeta Roce(int64_t ts, uint8_t opcode, uint32_t qp, uint32_t bytes, uint32_t src = 1) {
  PacketMeta m;
  m.ts_ns = ts;
  m.has_ip = m.has_l4 = m.has_bth = true;
  m.src = IpAddr::FromV4(src);
  m.dst = IpAddr::FromV4(2);
  m.proto = 17;
  m.src_port = 50000;
  m.dst_port = 4791;
  m.bth_opcode = opcode;
  m.dest_qp = qp;
  m.roce_payload_bytes = bytes;
  return m;
}

PacketMeta Tcp(int64_t ts, uint32_t payload) {
  PacketMeta m;
  m.ts_ns = ts;
  m.has_ip = m.has_l4 = true;
  m.src = IpAddr::FromV4(1);
  m.dst = IpAddr::FromV4(2);
  m.proto = 6;
  m.src_port = 1000;
  m.dst_port = 2000;
  m.payload_bytes = payload;
  return m;
}

struct Fixture : ::testing::Test {
  Collect sink;
  PointTable points;
  Stats stats;
  PacketFlowOptions options;
};

TEST_F(Fixture, WriteMessageFirstMiddleLastIsOneRecord) {
  PacketFlowBuilder b(options, &sink, &points, &stats);
  b.OnPacket(Roce(1000, 0x06, 9, 4096));
  b.OnPacket(Roce(1100, 0x07, 9, 4096));
  b.OnPacket(Roce(1200, 0x08, 9, 100));
  ASSERT_EQ(sink.records.size(), 1u);
  const FlowRecord& r = sink.records[0];
  EXPECT_EQ(r.start_ns, 1000);
  EXPECT_EQ(r.end_ns, 1200);
  EXPECT_EQ(r.bytes, 8292u);
  EXPECT_EQ(r.packets, 3u);
  EXPECT_EQ(r.qp, 9u);
  EXPECT_EQ(r.src_port, 50000);
  EXPECT_EQ(r.point, kNoPoint);
  EXPECT_EQ(stats.Get(Stat::records_read), 1u);
}

TEST_F(Fixture, QpsAreSeparateAndOnlyInsideAnOpenMessageStandsAlone) {
  PacketFlowBuilder b(options, &sink, &points, &stats);
  b.OnPacket(Roce(0, 0x00, 1, 4096));   // SEND FIRST qp 1
  b.OnPacket(Roce(10, 0x06, 2, 4096));  // WRITE FIRST qp 2
  b.OnPacket(Roce(20, 0x0A, 1, 64));    // WRITE ONLY qp 1 (CTS-like)
  b.OnPacket(Roce(30, 0x02, 1, 10));    // SEND LAST qp 1
  b.OnPacket(Roce(40, 0x09, 2, 20));    // WRITE LAST with imm qp 2
  ASSERT_EQ(sink.records.size(), 3u);
  EXPECT_EQ(sink.records[0].bytes, 64u);
  EXPECT_EQ(sink.records[1].bytes, 4106u);
  EXPECT_EQ(sink.records[2].bytes, 4116u);
  EXPECT_EQ(stats.Get(Stat::roce_message_incomplete), 0u);
}

TEST_F(Fixture, ReadResponsesAreMessagesAndControlIsCounted) {
  PacketFlowBuilder b(options, &sink, &points, &stats);
  b.OnPacket(Roce(0, 0x0C, 3, 0));       // READ request
  b.OnPacket(Roce(10, 0x0D, 4, 4096));   // READ response FIRST
  b.OnPacket(Roce(20, 0x0F, 4, 1000));   // READ response LAST
  PacketMeta ack = Roce(30, 0x11, 3, 0);
  ack.has_aeth = true;
  b.OnPacket(ack);
  ack.aeth_syndrome = 0x60;  // NAK
  b.OnPacket(ack);
  b.OnPacket(Roce(40, 0x81, 3, 0));  // CNP
  ASSERT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(sink.records[0].bytes, 5096u);
  EXPECT_EQ(stats.Get(Stat::roce_read_request), 1u);
  EXPECT_EQ(stats.Get(Stat::roce_ack), 1u);
  EXPECT_EQ(stats.Get(Stat::roce_nak), 1u);
  EXPECT_EQ(stats.Get(Stat::roce_cnp), 1u);
}

TEST_F(Fixture, IncompleteAndHeadlessMessages) {
  options.roce_idle_timeout_ns = 1000;
  PacketFlowBuilder b(options, &sink, &points, &stats);
  b.OnPacket(Roce(0, 0x06, 1, 4096));
  b.OnPacket(Roce(10, 0x06, 1, 4096));  // new FIRST: the first message lost its LAST
  EXPECT_EQ(sink.records.size(), 1u);
  b.OnPacket(Roce(5000, 0x07, 1, 4096));  // idle: closes the open one, starts headless
  EXPECT_EQ(sink.records.size(), 2u);
  b.OnPacket(Roce(5010, 0x08, 1, 4));
  ASSERT_EQ(sink.records.size(), 3u);
  EXPECT_EQ(sink.records[2].bytes, 4100u);
  b.OnPacket(Roce(5020, 0x08, 7, 4));  // lone LAST
  EXPECT_EQ(sink.records.size(), 4u);
  b.OnPacket(Roce(5030, 0x06, 8, 4096));
  b.Finish();  // end of capture
  EXPECT_EQ(sink.records.size(), 5u);
  EXPECT_EQ(stats.Get(Stat::roce_message_incomplete), 3u);
  EXPECT_EQ(stats.Get(Stat::roce_message_headless), 2u);
}

TEST_F(Fixture, IdleSweepClosesQuietMessages) {
  options.roce_idle_timeout_ns = 1000;
  options.flowlet_gap_ns = 1000;
  PacketFlowBuilder b(options, &sink, &points, &stats);
  b.OnPacket(Roce(0, 0x06, 1, 4096));
  b.OnPacket(Roce(500, 0x06, 2, 4096, 9));
  b.OnPacket(Roce(3000, 0x06, 3, 4096, 10));
  EXPECT_EQ(sink.records.size(), 2u);
  EXPECT_EQ(b.open_flows(), 1u);
}

TEST_F(Fixture, FlowletsSplitOnIdleGapAndIgnorePureAcks) {
  options.flowlet_gap_ns = 1'000'000;
  PacketFlowBuilder b(options, &sink, &points, &stats);
  b.OnPacket(Tcp(0, 1448));
  b.OnPacket(Tcp(100'000, 1448));
  b.OnPacket(Tcp(200'000, 0));  // pure ACK
  b.OnPacket(Tcp(1'500'000, 100));  // 1.4 ms after the last data: a new flowlet
  b.Finish();
  ASSERT_EQ(sink.records.size(), 2u);
  EXPECT_EQ(sink.records[0].bytes, 2896u);
  EXPECT_EQ(sink.records[0].end_ns, 100'000);
  EXPECT_EQ(sink.records[0].packets, 2u);
  EXPECT_EQ(sink.records[1].bytes, 100u);
  EXPECT_EQ(sink.records[1].qp, 0u);
  EXPECT_EQ(stats.Get(Stat::tcp_no_payload), 1u);
}

TEST_F(Fixture, ErspanSessionIsTheObservationPoint) {
  PacketFlowBuilder b(options, &sink, &points, &stats);
  PacketMeta m = Roce(0, 0x04, 1, 64);
  m.has_span = true;
  m.span_session = 12;
  m.span_exporter = IpAddr::FromV4(0xC0A80001);
  b.OnPacket(m);
  ASSERT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(points.Name(sink.records[0].point), "192.168.0.1/erspan-12");
}

TEST_F(Fixture, OpenTableIsBounded) {
  options.max_open_flows = 100;
  PacketFlowBuilder b(options, &sink, &points, &stats);
  for (uint32_t qp = 0; qp < 10'000; ++qp) b.OnPacket(Roce(qp, 0x06, qp + 2, 4096));
  EXPECT_LE(b.open_flows(), 100u);
  EXPECT_GT(stats.Get(Stat::flow_table_evictions), 0u);
  b.Finish();
  EXPECT_EQ(sink.records.size(), 10'000u);
}

// 1-in-N samples: no message assembly (a FIRST without its LAST is normal), one flowlet per
// (5-tuple, QP, N) that carries N, ended by the gap flowlet_gap x N capped at sampled_gap_max_ns.
TEST_F(Fixture, SampledRocePacketsAreFlowletsCarryingTheRate) {
  options.flowlet_gap_ns = 1'000;
  options.sampled_gap_max_ns = 50'000;
  PacketFlowBuilder b(options, &sink, &points, &stats);
  auto sampled = [](PacketMeta m, uint32_t n) {
    m.sampling_rate = n;
    return m;
  };
  b.OnPacket(sampled(Roce(0, 0x06, 9, 4096), 10));       // FIRST
  b.OnPacket(sampled(Roce(9'000, 0x07, 9, 4096), 10));   // 9 us later: within 1 us x 10
  b.OnPacket(sampled(Roce(30'000, 0x07, 9, 4096), 10));  // 21 us later: a new flowlet
  b.OnPacket(sampled(Roce(31'000, 0x11, 9, 0), 10));     // ACK: counted, not bytes
  b.OnPacket(sampled(Roce(32'000, 0x07, 7, 4096), 1000));  // another QP and rate
  b.OnPacket(sampled(Roce(82'000, 0x07, 7, 4096), 1000));  // 50 us: the cap, still joined
  b.Finish();
  ASSERT_EQ(sink.records.size(), 3u);
  std::sort(sink.records.begin(), sink.records.end(),
            [](const FlowRecord& x, const FlowRecord& y) { return x.start_ns < y.start_ns; });
  EXPECT_EQ(sink.records[0].start_ns, 0);
  EXPECT_EQ(sink.records[0].end_ns, 9'000);
  EXPECT_EQ(sink.records[0].bytes, 8192u);
  EXPECT_EQ(sink.records[0].packets, 2u);
  EXPECT_EQ(sink.records[0].sampling_rate, 10u);
  EXPECT_EQ(sink.records[0].qp, 9u);
  EXPECT_EQ(sink.records[1].start_ns, 30'000);
  EXPECT_EQ(sink.records[1].bytes, 4096u);
  EXPECT_EQ(sink.records[2].qp, 7u);
  EXPECT_EQ(sink.records[2].sampling_rate, 1000u);
  EXPECT_EQ(sink.records[2].end_ns, 82'000);
  EXPECT_EQ(stats.Get(Stat::roce_ack), 1u);
  EXPECT_EQ(stats.Get(Stat::roce_message_incomplete), 0u);
  EXPECT_EQ(stats.Get(Stat::roce_message_headless), 0u);
}

// A sampled RoCE flowlet whose PSNs step forward stands for its PSN span plus N - 1 unseen
// packets at each end (pcap/psn_span.h): its bytes are that estimate / N, so that bytes x N is the
// estimate. A PSN going back (retransmission) keeps the samples' bytes; TCP has no PSN.
TEST_F(Fixture, SampledRoceFlowletsAreEstimatedFromTheirPsnSpan) {
  PacketFlowBuilder b(options, &sink, &points, &stats);
  auto sampled = [](PacketMeta m, uint32_t psn) {
    m.sampling_rate = 10;
    m.psn = psn;
    return m;
  };
  b.OnPacket(sampled(Roce(0, 0x07, 9, 4096), 100));
  b.OnPacket(sampled(Roce(1'000, 0x07, 9, 4096), 110));
  b.OnPacket(sampled(Roce(2'000, 0x07, 9, 4096), 125));
  b.OnPacket(sampled(Roce(0, 0x07, 7, 4096), 500));  // QP 7: goes back to 480, a retransmission
  b.OnPacket(sampled(Roce(1'000, 0x07, 7, 4096), 480));
  PacketMeta tcp = Tcp(0, 1000);
  tcp.sampling_rate = 10;
  b.OnPacket(tcp);
  tcp.ts_ns = 1'000;
  b.OnPacket(tcp);
  b.Finish();
  ASSERT_EQ(sink.records.size(), 3u);
  std::sort(sink.records.begin(), sink.records.end(),
            [](const FlowRecord& x, const FlowRecord& y) {
              return x.proto * 100 + x.qp < y.proto * 100 + y.qp;
            });
  EXPECT_EQ(sink.records[0].proto, 6);
  EXPECT_EQ(sink.records[0].bytes, 2000u);  // the samples' own bytes
  EXPECT_EQ(sink.records[1].qp, 7u);
  EXPECT_EQ(sink.records[1].bytes, 8192u);
  EXPECT_EQ(sink.records[1].packets, 2u);
  // QP 9: span 25 packets, + 2 x 10 - 1 = 44 packets of 4096 bytes = 180,224; / 10 rounded.
  EXPECT_EQ(sink.records[2].qp, 9u);
  EXPECT_EQ(sink.records[2].bytes, 18022u);
  EXPECT_EQ(sink.records[2].packets, 3u);
  EXPECT_EQ(sink.records[2].sampling_rate, 10u);
  EXPECT_EQ(stats.Get(Stat::sampled_psn_span_estimates), 1u);
  EXPECT_EQ(stats.Get(Stat::sampled_psn_span_unusable), 1u);
}

TEST_F(Fixture, SampledPacketsTakeTheAgentAsPoint) {
  PacketFlowBuilder b(options, &sink, &points, &stats);
  PacketMeta m = Tcp(0, 100);
  m.sampling_rate = 4;
  m.has_agent_point = true;
  m.agent_point = points.Intern("10.0.0.1");
  b.OnPacket(m);
  b.Finish();
  ASSERT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(sink.records[0].point, m.agent_point);
  EXPECT_EQ(sink.records[0].sampling_rate, 4u);
}

}  // namespace
}  // namespace prism::ingest
