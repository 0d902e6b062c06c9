#include "ingest/ipfix/udp_collector.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "ingest/sflow/sflow_writer.h"
#include "testing/packet_builder.h"

namespace prism::ingest {
namespace {

using namespace prism::testing;  // NOLINT

struct Collect : FlowSink {
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
  std::vector<FlowRecord> records;
};

// One sending socket for the whole test: templates are scoped by the exporter's address *and*
// port (its transport session), so every datagram must come from the same source port.
void SendTo(uint16_t port, const Bytes& b) {
  static int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sendto(fd, b.data(), b.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
}

Bytes IpfixMessage(bool with_template, uint32_t bytes) {
  Bytes b = {0, 10, 0, 0};
  Put32(&b, 1'700'000'000);
  Put32(&b, 0);
  Put32(&b, 1);
  if (with_template) {
    Bytes t;
    Put16(&t, 2);
    Put16(&t, 4 + 4 + 5 * 4);
    Put16(&t, 256);
    Put16(&t, 5);
    for (auto [id, len] : std::vector<std::pair<uint16_t, uint16_t>>{
             {8, 4}, {12, 4}, {1, 4}, {152, 8}, {153, 8}}) {
      Put16(&t, id);
      Put16(&t, len);
    }
    Append(&b, t);
  }
  Put16(&b, 256);
  Put16(&b, 4 + 28);
  Put32(&b, V4(10, 0, 0, 1));
  Put32(&b, V4(10, 0, 0, 2));
  Put32(&b, bytes);
  Put64(&b, 1'700'000'000'000);
  Put64(&b, 1'700'000'000'500);
  b[2] = static_cast<uint8_t>(b.size() >> 8);
  b[3] = static_cast<uint8_t>(b.size());
  return b;
}

TEST(UdpCollector, ReceivesIpfixOnAFreeLoopbackPort) {
  Collect sink;
  PointTable points;
  Stats stats;
  auto c = UdpCollector::Start({}, &sink, &points);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_NE((*c)->port(), 0);
  SendTo((*c)->port(), IpfixMessage(true, 100));
  SendTo((*c)->port(), IpfixMessage(false, 200));
  SendTo((*c)->port(), Bytes{1, 2, 3});
  size_t got = 0;
  for (int i = 0; i < 50 && got < 3; ++i) got += (*c)->Drain(std::chrono::milliseconds(100), &stats);
  ASSERT_EQ(got, 3u);
  ASSERT_EQ(sink.records.size(), 2u);
  EXPECT_EQ(sink.records[1].bytes, 200u);
  EXPECT_EQ(sink.records[0].end_ns, 1'700'000'000'500'000'000);
  EXPECT_EQ(points.Name(sink.records[0].point), "127.0.0.1");
  EXPECT_EQ(stats.Get(Stat::collector_bad_datagram), 1u);
}

TEST(UdpCollector, QueueIsBounded) {
  Collect sink;
  PointTable points;
  Stats stats;
  UdpCollectorOptions o;
  o.max_queued_datagrams = 4;
  auto c = UdpCollector::Start(o, &sink, &points);
  ASSERT_TRUE(c);
  for (int i = 0; i < 50; ++i) SendTo((*c)->port(), IpfixMessage(true, 1));
  for (int i = 0; i < 100 && (*c)->datagrams_received() < 50; ++i) usleep(10'000);
  (*c)->Stop();
  (*c)->Drain(std::chrono::milliseconds(0), &stats);
  EXPECT_EQ(sink.records.size(), 4u);
  EXPECT_EQ(stats.Get(Stat::collector_datagrams_dropped), 46u);
}

// The collector bound to every loopback address; datagrams from 127.0.0.1 only are allowed:
// those from 127.0.0.2 (another "exporter") are refused before decoding and counted.
TEST(UdpCollector, AllowListRefusesOtherExporters) {
  Collect sink;
  PointTable points;
  Stats stats;
  UdpCollectorOptions o;
  o.bind_address = "127.0.0.1";
  o.allowed_sources = {*IpPrefix::Parse("127.0.0.1/32")};
  auto c = UdpCollector::Start(o, &sink, &points);
  ASSERT_TRUE(c) << c.error().message;
  const int other = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  from.sin_addr.s_addr = htonl(0x7f000002);  // 127.0.0.2
  ASSERT_EQ(bind(other, reinterpret_cast<sockaddr*>(&from), sizeof from), 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons((*c)->port());
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 3; ++i) {
    const Bytes b = IpfixMessage(true, 7);
    sendto(other, b.data(), b.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  }
  SendTo((*c)->port(), IpfixMessage(true, 100));
  for (int i = 0; i < 100 && (*c)->datagrams_received() + (*c)->datagrams_refused() < 4; ++i) {
    usleep(10'000);
  }
  size_t got = 0;
  for (int i = 0; i < 50 && got < 1; ++i) got += (*c)->Drain(std::chrono::milliseconds(100), &stats);
  close(other);
  ASSERT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(sink.records[0].bytes, 100u);
  EXPECT_EQ((*c)->datagrams_refused(), 3u);
}

TEST(IpPrefix, ParseAndContains) {
  auto p = IpPrefix::Parse("10.1.0.0/16");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->Contains(*IpAddr::Parse("10.1.255.3")));
  EXPECT_FALSE(p->Contains(*IpAddr::Parse("10.2.0.1")));
  EXPECT_TRUE(IpPrefix::Parse("0.0.0.0/0")->Contains(*IpAddr::Parse("192.0.2.1")));
  EXPECT_TRUE(IpPrefix::Parse("fd00::/8")->Contains(*IpAddr::Parse("fd12::1")));
  EXPECT_FALSE(IpPrefix::Parse("fd00::/8")->Contains(*IpAddr::Parse("10.0.0.1")));
  EXPECT_TRUE(IpPrefix::Parse("192.0.2.7")->Contains(*IpAddr::Parse("192.0.2.7")));
  EXPECT_FALSE(IpPrefix::Parse("192.0.2.7")->Contains(*IpAddr::Parse("192.0.2.8")));
  for (const char* bad : {"10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/", "10.0.0.0/x", "fd00::/129",
                          "nope/8", ""}) {
    EXPECT_FALSE(IpPrefix::Parse(bad)) << bad;
  }
}

TEST(UdpCollector, BadAddressIsAnError) {
  UdpCollectorOptions options;
  options.bind_address = "not-an-ip";
  options.max_queued_datagrams = 4;
  auto c = UdpCollector::Start(options, nullptr, nullptr);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
}

// --sflow-udp: the same socket and queue, an sFlow decoder behind; a flowlet ends when its stream
// has been quiet for its gap (Drain advances the clock) or, at the latest, in the last Drain.
TEST(UdpCollector, ReceivesSflowIntoSampledRecords) {
  Collect sink;
  PointTable points;
  Stats stats;
  UdpCollectorOptions options;
  options.protocol = UdpProtocol::kSflow;
  auto c = UdpCollector::Start(options, &sink, &points);
  ASSERT_TRUE(c) << c.error().message;
  SflowDatagramWriter w(IpAddr::FromV4(V4(10, 9, 9, 9)), 0);
  const Bytes frame = Eth(0x0800, Ipv4(V4(10, 0, 0, 1), V4(10, 0, 0, 2), 17,
                                       Udp(50000, 4791, Bth(0x07, 5, 0, 1000))));
  w.AddFlowSample({.sequence = 1, .sampling_rate = 50, .frame_length = 1070,
                   .header = std::span<const uint8_t>(frame.data(), 128)});
  const std::vector<uint8_t> d = w.Finish(1, 0);
  SendTo((*c)->port(), Bytes(d.begin(), d.end()));
  SendTo((*c)->port(), Bytes{0, 0, 0, 10, 1, 2, 3, 4});  // not sFlow
  for (int i = 0; i < 100 && stats.Get(Stat::sflow_datagrams) == 0; ++i) {
    (*c)->Drain(std::chrono::milliseconds(50), &stats);
  }
  (*c)->Drain(std::chrono::milliseconds(100), &stats);
  EXPECT_EQ(stats.Get(Stat::sflow_datagrams), 1u);
  EXPECT_EQ(stats.Get(Stat::sflow_collector_bad_datagram), 1u);
  (*c)->Stop();
  (*c)->Drain(std::chrono::milliseconds(0), &stats);
  ASSERT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(sink.records[0].sampling_rate, 50u);
  EXPECT_EQ(sink.records[0].bytes, 1000u);
  EXPECT_EQ(points.Name(sink.records[0].point), "10.9.9.9");
  EXPECT_EQ((*c)->records(), 1u);
}

}  // namespace
}  // namespace prism::ingest
