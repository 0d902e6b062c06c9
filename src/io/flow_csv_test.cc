#include "io/flow_csv.h"
#include "testing/temp_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace prism::io {
namespace {

using ::testing::HasSubstr;

class Collector : public FlowSink {
 public:
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
  std::vector<FlowRecord> records;
};

IpAddr Ip(const char* s) { return *IpAddr::Parse(s); }

std::string TempPath(const std::string& leaf) {
  return prism::testing::UniqueTempPath("flow_csv", "_" + std::string(leaf));
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

TEST(FlowCsv, ParsesReorderedAndUnknownColumns) {
  const std::string csv =
      "bytes,colour,end_ns,switch,dst,start_ns,src,qp,packets,sampling_rate,proto,dst_port,"
      "src_port\n"
      "4096,red,2000,leaf1,10.0.0.2,1000,10.0.0.1,77,3,4,17,4791,5000\n"
      "8192,blue,3000,,10.0.0.3,2500,10.0.0.1,0,0,1,6,80,1234\n";
  Collector sink;
  PointTable points;
  Stats stats;
  auto n = ReadFlowCsvBuffer(csv, "flows.csv", &sink, &points, &stats);
  ASSERT_TRUE(n.has_value()) << n.error().message;
  EXPECT_EQ(*n, 2u);
  ASSERT_EQ(sink.records.size(), 2u);
  const FlowRecord& a = sink.records[0];
  EXPECT_EQ(a.src, Ip("10.0.0.1"));
  EXPECT_EQ(a.dst, Ip("10.0.0.2"));
  EXPECT_EQ(a.start_ns, 1000);
  EXPECT_EQ(a.end_ns, 2000);
  EXPECT_EQ(a.bytes, 4096u);
  EXPECT_EQ(a.packets, 3u);
  EXPECT_EQ(a.qp, 77u);
  EXPECT_EQ(a.sampling_rate, 4u);
  EXPECT_EQ(a.proto, 17);
  EXPECT_EQ(a.src_port, 5000);
  EXPECT_EQ(a.dst_port, 4791);
  ASSERT_NE(a.point, kNoPoint);
  EXPECT_EQ(points.Name(a.point), "leaf1");
  EXPECT_EQ(sink.records[1].point, kNoPoint);  // empty switch field
  EXPECT_EQ(stats.Get(Stat::records_read), 2u);
  EXPECT_EQ(stats.SkippedTotal(), 0u);
}

TEST(FlowCsv, OptionalColumnsDefaultAndCrlfAndIpv6) {
  const std::string csv =
      "src,dst,start_ns,end_ns,bytes\r\n"
      "fd00::1,fd00::2,5,5,10\r\n"
      "\r\n"
      "2001:db8::a,10.1.2.3,-7,9,0";  // no final newline; pre-1970 times are integers too
  Collector sink;
  PointTable points;
  auto n = ReadFlowCsvBuffer(csv, "v6.csv", &sink, &points, nullptr);
  ASSERT_TRUE(n.has_value()) << n.error().message;
  ASSERT_EQ(sink.records.size(), 2u);
  EXPECT_EQ(sink.records[0].src, Ip("fd00::1"));
  EXPECT_FALSE(sink.records[0].src.is_v4());
  EXPECT_EQ(sink.records[0].packets, 0u);
  EXPECT_EQ(sink.records[0].sampling_rate, 1u);
  EXPECT_EQ(sink.records[0].qp, 0u);
  EXPECT_EQ(sink.records[0].point, kNoPoint);
  EXPECT_EQ(sink.records[1].src, Ip("2001:db8::a"));
  EXPECT_EQ(sink.records[1].dst, Ip("10.1.2.3"));
  EXPECT_EQ(sink.records[1].start_ns, -7);
  EXPECT_EQ(points.size(), 0u);
}

TEST(FlowCsv, BadRowsAreCountedSkippedAndDescribed) {
  const std::string csv =
      "src,dst,start_ns,end_ns,bytes,qp\n"
      "10.0.0.1,10.0.0.2,1,2,3,4\n"           // line 2: good
      "10.0.0.1,10.0.0.2,abc,2,3,4\n"         // line 3: bad start
      "10.0.0.1,10.0.0.2,1,2,3\n"             // line 4: too few fields
      "10.0.0.1,10.0.0.2,9,2,3,4\n"           // line 5: end before start
      "10.0.0.1,10.0.300.2,1,2,3,4\n"         // line 6: bad address
      "10.0.0.1,10.0.0.2,1,2,3,4294967296\n"  // line 7: qp overflows 32 bits
      "10.0.0.1,10.0.0.2,1,2,-3,4\n"          // line 8: negative bytes
      "10.0.0.5,10.0.0.6,1,2,3,4\n";          // line 9: good
  Collector sink;
  PointTable points;
  Stats stats;
  ::testing::internal::CaptureStderr();
  auto n = ReadFlowCsvBuffer(csv, "flows.csv", &sink, &points, &stats);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(n.has_value()) << n.error().message;
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(sink.records.size(), 2u);
  EXPECT_EQ(stats.Get(Stat::csv_bad_row), 5u);
  EXPECT_EQ(stats.Get(Stat::csv_bad_time), 1u);
  EXPECT_EQ(stats.Get(Stat::records_read), 2u);
  EXPECT_THAT(err, HasSubstr("flows.csv:3: expected an integer (Unix epoch ns) in column "
                             "start_ns, got 'abc'"));
  EXPECT_THAT(err, HasSubstr("flows.csv:4: expected 6 fields as in the header, got 5"));
  EXPECT_THAT(err,
              HasSubstr("flows.csv:5: expected end_ns >= start_ns, got end_ns 2 < start_ns 9"));
  EXPECT_THAT(err, HasSubstr("flows.csv:6: expected an IPv4 or IPv6 address in column dst, got "
                             "'10.0.300.2'"));
  EXPECT_THAT(err, HasSubstr("flows.csv:7: expected an unsigned integer <= 4294967295 in column "
                             "qp, got '4294967296'"));
  // Only the first 5 are shown; the 6th is summarized.
  EXPECT_THAT(err, ::testing::Not(HasSubstr("flows.csv:8:")));
  EXPECT_THAT(err, HasSubstr("flows.csv: 1 more problems not shown"));
}

TEST(FlowCsv, MissingRequiredColumnIsAnErrorNamingFileAndColumn) {
  Collector sink;
  PointTable points;
  auto n = ReadFlowCsvBuffer("src,dst,start_ns,end_ns,packets\n1.1.1.1,2.2.2.2,1,2,3\n", "x.csv",
                             &sink, &points, nullptr);
  ASSERT_FALSE(n.has_value());
  EXPECT_EQ(n.error().code, ErrorCode::kDataLoss);
  EXPECT_THAT(n.error().message, HasSubstr("x.csv:1"));
  EXPECT_THAT(n.error().message, HasSubstr("'bytes'"));
  EXPECT_TRUE(sink.records.empty());
}

TEST(FlowCsv, EmptyHeaderOnlyAndAllBadAreErrors) {
  Collector sink;
  PointTable points;
  Stats stats;
  auto empty = ReadFlowCsvBuffer("", "empty.csv", &sink, &points, &stats);
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().code, ErrorCode::kDataLoss);
  EXPECT_THAT(empty.error().message, HasSubstr("empty.csv"));

  auto header_only =
      ReadFlowCsvBuffer("src,dst,start_ns,end_ns,bytes\n", "h.csv", &sink, &points, &stats);
  ASSERT_FALSE(header_only.has_value());
  EXPECT_EQ(header_only.error().code, ErrorCode::kDataLoss);

  ::testing::internal::CaptureStderr();
  auto all_bad = ReadFlowCsvBuffer("src,dst,start_ns,end_ns,bytes\nx,y,1,2,3\n", "b.csv", &sink,
                                   &points, &stats);
  ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(all_bad.has_value());
  EXPECT_THAT(all_bad.error().message, HasSubstr("1 rows skipped"));
  EXPECT_EQ(stats.Get(Stat::csv_bad_row), 1u);
}

TEST(FlowCsv, MissingFileIsNotFound) {
  Collector sink;
  PointTable points;
  auto n = ReadFlowCsv(TempPath("does_not_exist.csv"), &sink, &points, nullptr);
  ASSERT_FALSE(n.has_value());
  EXPECT_EQ(n.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(n.error().message, HasSubstr("does_not_exist.csv"));
}

std::vector<FlowRecord> MakeRecords(size_t n, PointTable* points) {
  std::vector<FlowRecord> out;
  PointId a = points->Intern("spine-1");
  PointId b = points->Intern("leaf-17");
  for (size_t i = 0; i < n; ++i) {
    FlowRecord r;
    r.start_ns = 1'700'000'000'000'000'000 + static_cast<int64_t>(i) * 1'234'567;
    r.end_ns = r.start_ns + static_cast<int64_t>(i % 1000);
    r.src = IpAddr::FromV4(0x0A000000u + static_cast<uint32_t>(i % 4096));
    uint8_t v6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, static_cast<uint8_t>(i)};
    r.dst =
        i % 7 == 0 ? IpAddr::FromV6(v6) : IpAddr::FromV4(0xC0A80001u + static_cast<uint32_t>(i));
    r.src_port = static_cast<uint16_t>(i * 31);
    r.dst_port = 4791;
    r.proto = 17;
    r.qp = static_cast<uint32_t>(i * 2654435761u);
    r.bytes = i * 1000003ull;
    r.packets = i;
    r.sampling_rate = 1 + static_cast<uint32_t>(i % 3);
    r.point = i % 5 == 0 ? kNoPoint : (i % 2 ? a : b);
    out.push_back(r);
  }
  return out;
}

void ExpectSame(const FlowRecord& a, const FlowRecord& b, const PointTable& pa,
                const PointTable& pb) {
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.src, b.src);
  EXPECT_EQ(a.dst, b.dst);
  EXPECT_EQ(a.src_port, b.src_port);
  EXPECT_EQ(a.dst_port, b.dst_port);
  EXPECT_EQ(a.proto, b.proto);
  EXPECT_EQ(a.qp, b.qp);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.packets, b.packets);
  EXPECT_EQ(a.sampling_rate, b.sampling_rate);
  ASSERT_EQ(a.point == kNoPoint, b.point == kNoPoint);
  if (a.point != kNoPoint) {
    EXPECT_EQ(pa.Name(a.point), pb.Name(b.point));
  }
}

TEST(FlowCsv, WriterOutputReadsBackIdentically) {
  PointTable points;
  auto records = MakeRecords(500, &points);
  std::ostringstream out;
  {
    FlowCsvWriter w(&out, &points);
    for (const auto& r : records) w.OnRecord(r);
    w.Flush();
  }
  std::string csv = out.str();
  EXPECT_EQ(csv.substr(0, csv.find('\n')), std::string(kFlowCsvHeader));
  EXPECT_THAT(csv, HasSubstr("\n10.0.0.1,192.168.0.2,1700000000001234567,1700000000001234568,"
                             "1000003,1,31,4791,17,2654435761,2,spine-1\n"));
  Collector sink;
  PointTable points2;
  auto n = ReadFlowCsvBuffer(csv, "w.csv", &sink, &points2, nullptr);
  ASSERT_TRUE(n.has_value()) << n.error().message;
  ASSERT_EQ(sink.records.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSame(records[i], sink.records[i], points, points2);
  }
}

// More than one 4 MiB read chunk, so lines straddle chunk boundaries; plain and zstd.
TEST(FlowCsv, ReadsLargePlainAndZstdFiles) {
  PointTable points;
  auto records = MakeRecords(120'000, &points);
  std::ostringstream out;
  FlowCsvWriter w(&out, &points);
  for (const auto& r : records) w.OnRecord(r);
  w.Flush();
  std::string csv = out.str();
  ASSERT_GT(csv.size(), size_t{8} << 20);

  std::string plain = TempPath("flow_csv_large.csv");
  WriteFile(plain, csv);
  std::string compressed(ZSTD_compressBound(csv.size()), '\0');
  size_t z = ZSTD_compress(compressed.data(), compressed.size(), csv.data(), csv.size(), 1);
  ASSERT_FALSE(ZSTD_isError(z));
  compressed.resize(z);
  std::string zst = TempPath("flow_csv_large.csv.zst");
  WriteFile(zst, compressed);

  for (const std::string& path : {plain, zst}) {
    SCOPED_TRACE(path);
    Collector sink;
    PointTable points2;
    Stats stats;
    auto n = ReadFlowCsv(path, &sink, &points2, &stats);
    ASSERT_TRUE(n.has_value()) << n.error().message;
    ASSERT_EQ(sink.records.size(), records.size());
    EXPECT_EQ(stats.SkippedTotal(), 0u);
    for (size_t i = 0; i < records.size(); i += 997) {
      ExpectSame(records[i], sink.records[i], points, points2);
    }
    ExpectSame(records.back(), sink.records.back(), points, points2);
  }
  std::filesystem::remove(plain);
  std::filesystem::remove(zst);
}

TEST(FlowCsv, TruncatedZstdFileIsAnError) {
  std::string csv = "src,dst,start_ns,end_ns,bytes\n1.1.1.1,2.2.2.2,1,2,3\n";
  std::string compressed(ZSTD_compressBound(csv.size()), '\0');
  size_t z = ZSTD_compress(compressed.data(), compressed.size(), csv.data(), csv.size(), 1);
  ASSERT_FALSE(ZSTD_isError(z));
  compressed.resize(z - 3);
  std::string path = TempPath("flow_csv_trunc.csv.zst");
  WriteFile(path, compressed);
  Collector sink;
  PointTable points;
  auto n = ReadFlowCsv(path, &sink, &points, nullptr);
  ASSERT_FALSE(n.has_value());
  EXPECT_EQ(n.error().code, ErrorCode::kDataLoss);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace prism::io
