#include "counters/sflow_counters.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "ingest/pcap/packet_flow_builder.h"
#include "ingest/sflow/sflow_decoder.h"
#include "ingest/sflow/sflow_writer.h"

namespace prism::counters {
namespace {

struct Discard : FlowSink {
  void OnRecord(const FlowRecord&) override {}
};

// Datagrams of counter samples through the decoder into the builder, as ReadSflowCounters does
// for a capture.
struct SflowCountersTest : ::testing::Test {
  Discard sink;
  PointTable points;
  Stats stats;
  ingest::PacketFlowOptions options;
  ingest::PacketFlowBuilder flows{options, &sink, &points, &stats};
  ingest::SflowDecoder decoder{"test", &flows, &points, &stats};
  SflowCountersBuilder builder{&stats};
  const IpAddr agent = IpAddr::FromV4(0xC0A80001);  // 192.168.0.1
  uint32_t datagram_seq = 0;

  SflowCountersTest() {
    decoder.SetCounterObserver([this](const ingest::SflowInterfacePoll& p) { builder.Add(p); });
  }

  static ingest::SflowInterfaceCounters Counters(uint32_t if_index, uint64_t in_octets,
                                                 uint64_t out_octets) {
    ingest::SflowInterfaceCounters c;
    c.if_index = if_index;
    c.if_type = 6;
    c.if_speed = 400'000'000'000;
    c.in_octets = in_octets;
    c.out_octets = out_octets;
    return c;
  }

  // One datagram holding one counter sample per entry of `ports`, captured at `ts_ns`.
  std::vector<uint8_t> Datagram(const std::vector<ingest::SflowInterfaceCounters>& ports) {
    ingest::SflowDatagramWriter w(agent, 0);
    for (const auto& c : ports) w.AddCounterSample(datagram_seq, c.if_index, c);
    ++datagram_seq;
    return w.Finish(datagram_seq, 1000 * datagram_seq);
  }
};

TEST_F(SflowCountersTest, EachAgentInterfaceIsAPortOfDeltas) {
  // Port 3 carries 1 MB in and 2 MB out per second, port 7 nothing; polls 1 s apart.
  for (uint64_t k = 0; k < 4; ++k) {
    decoder.DecodeDatagram(Datagram({Counters(3, 5'000'000 + k * 1'000'000, k * 2'000'000),
                                     Counters(7, 42, 42)}),
                           int64_t{1'700'000'000} * 1'000'000'000 + int64_t(k) * 1'000'000'000);
  }
  decoder.Finish();
  const CountersData d = builder.Finish();
  ASSERT_EQ(d.ports.size(), 2u);
  EXPECT_EQ(d.ports[0].switch_name, "192.168.0.1");
  EXPECT_EQ(d.ports[0].port, "3");
  EXPECT_EQ(d.ports[1].port, "7");
  EXPECT_EQ(d.ports[0].ts_ms,
            (std::vector<int64_t>{1'700'000'000'000, 1'700'000'001'000, 1'700'000'002'000,
                                  1'700'000'003'000}));
  // The first delta is the first value (its interval is unknown; the resampler drops it).
  EXPECT_EQ(d.ports[0].in_bytes,
            (std::vector<uint64_t>{5'000'000, 1'000'000, 1'000'000, 1'000'000}));
  EXPECT_EQ(d.ports[0].out_bytes, (std::vector<uint64_t>{0, 2'000'000, 2'000'000, 2'000'000}));
  EXPECT_EQ(d.ports[1].in_bytes, (std::vector<uint64_t>{42, 0, 0, 0}));
  EXPECT_EQ(d.rows, 8u);
  EXPECT_EQ(stats.Get(Stat::counters_rows), 8u);
  EXPECT_EQ(stats.Get(Stat::sflow_counter_samples), 8u);
  EXPECT_EQ(stats.Get(Stat::sflow_interface_counters), 8u);
  EXPECT_EQ(stats.SkippedTotal(), 0u);
}

TEST_F(SflowCountersTest, ThirtyTwoBitWrapAndAgentRestartAreRecovered) {
  // An agent exporting 32-bit ifInOctets in the 64-bit field: it wraps at 2^32.
  const uint64_t k32 = uint64_t{1} << 32;
  const std::vector<uint64_t> in = {k32 - 0x3000, k32 - 0x1000, 0x1000, 0x3000,
                                    0x500 /* restart */, 0x900};
  for (size_t k = 0; k < in.size(); ++k) {
    decoder.DecodeDatagram(Datagram({Counters(5, in[k], 0)}),
                           int64_t{1'000'000'000} * static_cast<int64_t>(k + 1));
  }
  const CountersData d = builder.Finish();
  ASSERT_EQ(d.ports.size(), 1u);
  EXPECT_EQ(d.ports[0].in_bytes,
            (std::vector<uint64_t>{k32 - 0x3000, 0x2000, 0x2000, 0x2000, 0x500, 0x400}));
  EXPECT_EQ(stats.Get(Stat::counters_wrap), 1u);
  EXPECT_EQ(stats.Get(Stat::counters_reset), 1u);
}

TEST_F(SflowCountersTest, BadCounterRecordsAreCountedAndSkipped) {
  decoder.DecodeDatagram(Datagram({Counters(3, 100, 100)}), 1'000'000'000);
  // A generic interface counters record 4 bytes short: record length (offset 52) 84, the
  // sample's (offset 32) 104, the datagram 4 bytes shorter.
  std::vector<uint8_t> bad = Datagram({Counters(3, 200, 200)});
  ASSERT_EQ(bad.size(), 144u);
  bad[55] = 84;
  bad[35] = 104;
  bad.resize(140);
  decoder.DecodeDatagram(bad, 2'000'000'000);
  // Polls out of time order: the second at the same millisecond is skipped.
  decoder.DecodeDatagram(Datagram({Counters(3, 300, 300)}), 3'000'000'000);
  decoder.DecodeDatagram(Datagram({Counters(3, 400, 400)}), 3'000'000'100);
  decoder.Finish();
  const CountersData d = builder.Finish();
  ASSERT_EQ(d.ports.size(), 1u);
  EXPECT_EQ(d.ports[0].in_bytes, (std::vector<uint64_t>{100, 200}));
  EXPECT_EQ(stats.Get(Stat::sflow_bad_sample), 1u);
  EXPECT_EQ(stats.Get(Stat::counters_out_of_order), 1u);
  EXPECT_EQ(stats.SkippedTotal(), 2u);
}

}  // namespace
}  // namespace prism::counters
