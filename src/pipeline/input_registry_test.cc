#include "pipeline/input_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ingest/packet/decoders.h"
#include "testing/packet_builder.h"

namespace prism::pipeline {
namespace {

using namespace prism::testing;  // NOLINT
using ingest::kEtherIpv4;
using ::testing::HasSubstr;

struct Collect : FlowSink {
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
  std::vector<FlowRecord> records;
};

class InputRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("input_registry_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, std::span<const std::byte> data) {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    return path;
  }
  std::string WriteZstd(const std::string& name, std::span<const std::byte> data) {
    std::vector<std::byte> z(ZSTD_compressBound(data.size()));
    const size_t n = ZSTD_compress(z.data(), z.size(), data.data(), data.size(), 3);
    EXPECT_FALSE(ZSTD_isError(n));
    z.resize(n);
    return Write(name, z);
  }

  std::filesystem::path dir_;
};

// Three RDMA WRITE messages of 3 packets each, one 16 KB apart on two QPs, and two UDP datagrams
// 5 ms apart (one flowlet with a 10 ms gap, two with a 1 ms gap).
PcapWriter Capture() {
  PcapWriter w;
  const int64_t t0 = 1'700'000'000'000'000'000;
  for (int m = 0; m < 3; ++m) {
    for (uint32_t i = 0; i < 3; ++i) {
      const uint8_t op = i == 0 ? 0x06 : i == 2 ? 0x08 : 0x07;
      w.Add(t0 + m * 1'000'000 + i * 100,
            Eth(kEtherIpv4, Ipv4(V4(10, 0, 0, 1), V4(10, 0, 1, 1), 17,
                                 Udp(49152, 4791, Bth(op, 7 + m % 2, i, 4096, i == 0 ? 16 : 0)))));
    }
  }
  for (int d = 0; d < 2; ++d) {
    w.Add(t0 + 10'000'000 + d * 5'000'000,
          Eth(kEtherIpv4, Ipv4(V4(10, 0, 0, 2), V4(10, 0, 1, 2), 17, Udp(5000, 6000, Bytes(512)))));
  }
  return w;
}

TEST_F(InputRegistryTest, CompressedCaptureReadsLikeThePlainOne) {
  const PcapWriter w = Capture();
  const std::string plain = Write("c.pcap", w.span());
  const std::string packed = WriteZstd("c.pcap.zst", w.span());
  for (double gap_ms : {1.0, 10.0}) {
    ReadOptions options;
    options.capture.flows.flowlet_gap_ns = static_cast<int64_t>(gap_ms * 1e6);
    Collect a, b;
    PointTable pa, pb;
    Stats sa, sb;
    auto ra = InputRegistry::Default().Read(plain, options, &a, &pa, &sa);
    auto rb = InputRegistry::Default().Read(packed, options, &b, &pb, &sb);
    ASSERT_TRUE(ra) << ra.error().message;
    ASSERT_TRUE(rb) << rb.error().message;
    EXPECT_EQ(ra->kind, io::InputKind::kPcap);
    EXPECT_EQ(rb->kind, io::InputKind::kPcap);
    // 3 messages + the datagrams as one flowlet (10 ms gap) or two (1 ms): the option reaches
    // the packet builder for the compressed capture too.
    EXPECT_EQ(ra->records, gap_ms == 10.0 ? 4u : 5u);
    ASSERT_EQ(a.records.size(), b.records.size());
    for (size_t i = 0; i < a.records.size(); ++i) {
      EXPECT_EQ(a.records[i].start_ns, b.records[i].start_ns);
      EXPECT_EQ(a.records[i].end_ns, b.records[i].end_ns);
      EXPECT_EQ(a.records[i].bytes, b.records[i].bytes);
      EXPECT_EQ(a.records[i].qp, b.records[i].qp);
    }
    EXPECT_EQ(sa.values(), sb.values());
  }
}

TEST_F(InputRegistryTest, CorruptCompressedCaptureNamesTheFile) {
  const PcapWriter w = Capture();
  std::vector<std::byte> z(ZSTD_compressBound(w.span().size()));
  z.resize(ZSTD_compress(z.data(), z.size(), w.span().data(), w.span().size(), 3));
  z.resize(z.size() / 2);  // cut inside the frame
  const std::string path = Write("cut.pcap.zst", z);
  Collect sink;
  PointTable points;
  Stats stats;
  auto r = InputRegistry::Default().Read(path, {}, &sink, &points, &stats);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr(path));
}

TEST_F(InputRegistryTest, FlowCsvPlainAndCompressed) {
  const std::string csv =
      "src,dst,start_ns,end_ns,bytes\n10.0.0.1,10.0.0.2,100,200,4096\n10.0.0.2,10.0.0.1,300,400,8\n";
  const auto bytes = std::as_bytes(std::span(csv.data(), csv.size()));
  for (const std::string& path : {Write("f.csv", bytes), WriteZstd("f.csv.zst", bytes)}) {
    Collect sink;
    PointTable points;
    Stats stats;
    auto r = InputRegistry::Default().Read(path, {}, &sink, &points, &stats);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->kind, io::InputKind::kFlowCsv);
    EXPECT_EQ(r->records, 2u);
    ASSERT_EQ(sink.records.size(), 2u);
    EXPECT_EQ(sink.records[1].bytes, 8u);
  }
}

TEST_F(InputRegistryTest, InputsThatAreNotFlowRecordsSayWhatTheyAre) {
  struct Case {
    std::string name, text;
    ErrorCode code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"topo.csv", "ip,host,gpu,leaf\n10.0.0.1,h0,0,leaf0\n", ErrorCode::kInvalidArgument,
       "pass it with --topology"},
      {"ports.csv", "ts_ns,switch,port,in_bytes\n1,s,p,3\n", ErrorCode::kInvalidArgument,
       "port counters"},
      {"empty.csv", "", ErrorCode::kDataLoss, "no data"},
      {"junk.bin", "\x7f" "ELF\x02\x01\x01", ErrorCode::kDataLoss, "unknown input format"},
  };
  for (const Case& c : cases) {
    const std::string path = Write(c.name, std::as_bytes(std::span(c.text.data(), c.text.size())));
    Collect sink;
    PointTable points;
    Stats stats;
    io::InputKind kind = io::InputKind::kUnknown;
    auto r = InputRegistry::Default().Read(path, {}, &sink, &points, &stats, &kind);
    ASSERT_FALSE(r) << c.name;
    EXPECT_EQ(r.error().code, c.code) << c.name;
    EXPECT_THAT(r.error().message, HasSubstr(path));
    EXPECT_THAT(r.error().message, HasSubstr(c.says));
  }
  Collect sink;
  PointTable points;
  Stats stats;
  auto missing = InputRegistry::Default().Read((dir_ / "missing").string(), {}, &sink, &points,
                                                &stats);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(InputRegistryTest, ARegisteredReaderServesItsKind) {
  InputRegistry r;
  EXPECT_FALSE(r.Has(io::InputKind::kFlowCsv));
  int calls = 0;
  r.Register(io::InputKind::kFlowCsv,
             [&calls](const std::string&, const ReadOptions&, FlowSink*, PointTable*, Stats*)
                 -> StatusOr<uint64_t> { return ++calls; });
  const std::string csv = "src,dst,start_ns,end_ns,bytes\n";
  const std::string path = Write("x.csv", std::as_bytes(std::span(csv.data(), csv.size())));
  Collect sink;
  PointTable points;
  Stats stats;
  auto res = r.Read(path, {}, &sink, &points, &stats);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->records, 1u);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace prism::pipeline
