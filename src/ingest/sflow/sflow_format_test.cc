#include "ingest/sflow/sflow_format.h"

#include <gtest/gtest.h>

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

std::vector<uint8_t> TwoSampleDatagram(const IpAddr& agent) {
  SflowDatagramWriter w(agent, 3);
  const std::vector<uint8_t> header = RoceHeader(0x0A000001, 0x0A000002, 50000, 77, 4096);
  w.AddFlowSample({.sequence = 11, .source_index = 5, .sampling_rate = 1000,
                   .sample_pool = 123456, .drops = 2, .input = 5, .output = 6,
                   .frame_length = 4158, .header = header});
  SflowInterfaceCounters c;
  c.if_index = 5;
  c.if_speed = 400'000'000'000ull;
  c.in_octets = 1ull << 40;
  c.out_octets = 42;
  c.out_errors = 7;
  w.AddCounterSample(9, 5, c);
  return w.Finish(/*sequence=*/100, /*uptime_ms=*/5000);
}

TEST(SflowFormat, RoundTripsDatagramFlowAndCounterSamples) {
  const std::vector<uint8_t> data = TwoSampleDatagram(IpAddr::FromV4(0xC0A80001));
  EXPECT_TRUE(LooksLikeSflowDatagram(data, data.size()));
  SflowDatagram d;
  SflowProblem p;
  ASSERT_TRUE(ParseSflowDatagram(data, &d, &p)) << p.expected;
  EXPECT_EQ(d.agent.ToString(), "192.168.0.1");
  EXPECT_EQ(d.sub_agent, 3u);
  EXPECT_EQ(d.sequence, 100u);
  EXPECT_EQ(d.uptime_ms, 5000u);
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[0].type, kSflowFlowSample);
  EXPECT_EQ(d.samples[0].offset, 36u);  // 28-byte header, then type and length

  SflowFlowSample s;
  ASSERT_TRUE(ParseFlowSample(d.samples[0], &s, &p)) << p.expected;
  EXPECT_EQ(s.sequence, 11u);
  EXPECT_EQ(s.source_index, 5u);
  EXPECT_EQ(s.sampling_rate, 1000u);
  EXPECT_EQ(s.sample_pool, 123456u);
  EXPECT_EQ(s.drops, 2u);
  EXPECT_EQ(s.output, 6u);
  ASSERT_EQ(s.records.size(), 1u);
  SflowRawHeader h;
  ASSERT_TRUE(ParseRawHeader(s.records[0], &h, &p)) << p.expected;
  EXPECT_EQ(h.protocol, kSflowHeaderEthernet);
  EXPECT_EQ(h.frame_length, 4158u);
  EXPECT_EQ(h.header.size(), 128u);  // cut as an agent cuts it

  SflowCounterSample cs;
  ASSERT_TRUE(ParseCounterSample(d.samples[1], &cs, &p)) << p.expected;
  EXPECT_EQ(cs.sequence, 9u);
  ASSERT_EQ(cs.records.size(), 1u);
  SflowInterfaceCounters c;
  ASSERT_TRUE(ParseInterfaceCounters(cs.records[0], &c, &p)) << p.expected;
  EXPECT_EQ(c.if_index, 5u);
  EXPECT_EQ(c.if_speed, 400'000'000'000ull);
  EXPECT_EQ(c.in_octets, 1ull << 40);
  EXPECT_EQ(c.out_octets, 42u);
  EXPECT_EQ(c.out_errors, 7u);
}

TEST(SflowFormat, Ipv6AgentAndExpandedSample) {
  const IpAddr agent = *IpAddr::Parse("2001:db8::7");
  SflowDatagramWriter w(agent, 0);
  const std::vector<uint8_t> header = RoceHeader(1, 2, 1, 2, 100);
  w.AddFlowSample({.expanded = true, .sequence = 1, .source_type = 0,
                   .source_index = 0x01234567, .sampling_rate = 4, .frame_length = 200,
                   .header = header});
  const std::vector<uint8_t> data = w.Finish(1, 1);
  EXPECT_TRUE(LooksLikeSflowDatagram(data, data.size()));
  SflowDatagram d;
  SflowProblem p;
  ASSERT_TRUE(ParseSflowDatagram(data, &d, &p)) << p.expected;
  EXPECT_EQ(d.agent, agent);
  ASSERT_EQ(d.samples.size(), 1u);
  SflowFlowSample s;
  ASSERT_TRUE(ParseFlowSample(d.samples[0], &s, &p)) << p.expected;
  EXPECT_TRUE(s.expanded);
  EXPECT_EQ(s.source_index, 0x01234567u);  // beyond 24 bits: only the expanded form holds it
  EXPECT_EQ(s.sampling_rate, 4u);
}

// Every prefix of a valid datagram is refused with a problem inside the data, never read past.
TEST(SflowFormat, EveryTruncationIsAProblemNotACrash) {
  const std::vector<uint8_t> data = TwoSampleDatagram(IpAddr::FromV4(1));
  for (size_t n = 0; n < data.size(); ++n) {
    std::span<const uint8_t> cut(data.data(), n);
    SflowDatagram d;
    SflowProblem p;
    EXPECT_FALSE(ParseSflowDatagram(cut, &d, &p)) << n;
    EXPECT_LE(p.offset, n) << n;
    EXPECT_FALSE(p.expected.empty()) << n;
  }
}

TEST(SflowFormat, NamesWhatWasExpected) {
  std::vector<uint8_t> data = TwoSampleDatagram(IpAddr::FromV4(1));
  SflowDatagram d;
  SflowProblem p;
  std::vector<uint8_t> v4 = data;
  v4[3] = 4;
  EXPECT_FALSE(ParseSflowDatagram(v4, &d, &p));
  EXPECT_EQ(p.offset, 0u);
  EXPECT_EQ(p.expected, "expected sFlow version 5, got 4");
  EXPECT_FALSE(LooksLikeSflowDatagram(v4, v4.size()));

  std::vector<uint8_t> count = data;
  count[27] = 200;  // 200 samples cannot fit
  EXPECT_FALSE(ParseSflowDatagram(count, &d, &p));
  EXPECT_EQ(p.offset, 24u);
  EXPECT_NE(p.expected.find("got a count of 200"), std::string::npos) << p.expected;

  std::vector<uint8_t> length = data;
  length[35] = 3;  // first sample's length: not a multiple of 4
  length[34] = 0;
  EXPECT_FALSE(ParseSflowDatagram(length, &d, &p));
  EXPECT_EQ(p.offset, 36u);

  std::vector<uint8_t> longer = data;
  longer.push_back(0);
  EXPECT_FALSE(ParseSflowDatagram(longer, &d, &p));
  EXPECT_EQ(p.offset, data.size());

  // A flow sample claiming more records than it holds: the datagram frames, the sample fails.
  ASSERT_TRUE(ParseSflowDatagram(data, &d, &p));
  std::vector<uint8_t> body(d.samples[0].body.begin(), d.samples[0].body.end());
  body[31] = 50;  // number of records: more than 80 bytes can frame
  SflowElement e = d.samples[0];
  e.body = body;
  SflowFlowSample s;
  EXPECT_FALSE(ParseFlowSample(e, &s, &p));
  EXPECT_EQ(p.offset, e.offset + 28);
  // A zero sampling rate would make the 1-in-N scaling meaningless.
  body = std::vector<uint8_t>(d.samples[0].body.begin(), d.samples[0].body.end());
  for (int i = 8; i < 12; ++i) body[i] = 0;
  e.body = body;
  EXPECT_FALSE(ParseFlowSample(e, &s, &p));
  EXPECT_EQ(p.expected, "expected a sampling rate >= 1, got 0");
}

}  // namespace
}  // namespace prism::ingest
