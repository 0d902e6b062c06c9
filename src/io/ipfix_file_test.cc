#include "io/ipfix_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "io/flow_csv.h"
#include "testing/temp_path.h"

namespace prism::io {
namespace {

using ::testing::HasSubstr;

class Collector : public FlowSink {
 public:
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
  std::vector<FlowRecord> records;
};

std::span<const std::byte> Bytes(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

// Builds IPFIX messages by hand (big-endian), after ipfixcol2's MsgGen.
class MsgBuilder {
 public:
  MsgBuilder& U8(uint8_t v) {
    b_.push_back(static_cast<char>(v));
    return *this;
  }
  MsgBuilder& U16(uint16_t v) {
    return U8(static_cast<uint8_t>(v >> 8)).U8(static_cast<uint8_t>(v));
  }
  MsgBuilder& U32(uint32_t v) {
    return U16(static_cast<uint16_t>(v >> 16)).U16(static_cast<uint16_t>(v));
  }
  MsgBuilder& U64(uint64_t v) {
    return U32(static_cast<uint32_t>(v >> 32)).U32(static_cast<uint32_t>(v));
  }
  // A template field specifier; pen != 0 sets the enterprise bit.
  MsgBuilder& Field(uint16_t id, uint16_t len, uint32_t pen = 0) {
    U16(pen != 0 ? static_cast<uint16_t>(id | 0x8000) : id).U16(len);
    return pen != 0 ? U32(pen) : *this;
  }
  MsgBuilder& Str(std::string_view s) {
    b_.append(s);
    return *this;
  }
  // Message header with a length patched by EndMessage().
  MsgBuilder& Message(uint32_t domain) {
    msg_ = b_.size();
    return U16(10).U16(0).U32(0).U32(0).U32(domain);
  }
  MsgBuilder& Set(uint16_t id) {
    set_ = b_.size();
    return U16(id).U16(0);
  }
  MsgBuilder& EndSet() { return Patch(set_); }
  MsgBuilder& EndMessage() { return Patch(msg_); }
  std::string str() const { return b_; }

 private:
  MsgBuilder& Patch(size_t at) {
    size_t len = b_.size() - at;
    b_[at + 2] = static_cast<char>(len >> 8);
    b_[at + 3] = static_cast<char>(len);
    return *this;
  }
  std::string b_;
  size_t msg_ = 0, set_ = 0;
};

std::vector<FlowRecord> RandomRecords(size_t n, uint32_t seed, PointTable* points) {
  std::mt19937_64 rng(seed);
  std::vector<PointId> ids = {kNoPoint, points->Intern("leaf-1"), points->Intern("spine-02"),
                              points->Intern(std::string(300, 'x')),  // 3-byte varlen length
                              points->Intern(std::string(254, 'y'))};
  std::vector<FlowRecord> out;
  for (size_t i = 0; i < n; ++i) {
    FlowRecord r;
    // 1968-2104, the span NTP era 0/1 round trips; any ns.
    r.start_ns = static_cast<int64_t>(rng() % (4'200'000'000ull * 1'000'000'000ull)) -
                 60'000'000'000'000'000ll;
    r.end_ns = r.start_ns + static_cast<int64_t>(rng() % 10'000'000'000ull);
    if (rng() % 2) {
      r.src = IpAddr::FromV4(static_cast<uint32_t>(rng()));
      r.dst = IpAddr::FromV4(static_cast<uint32_t>(rng()));
    } else {
      uint8_t a[16], b[16];
      for (auto& x : a) x = static_cast<uint8_t>(rng());
      for (auto& x : b) x = static_cast<uint8_t>(rng());
      a[0] = 0xfd;  // never the v4-mapped prefix
      r.src = IpAddr::FromV6(a);
      r.dst = rng() % 4 ? IpAddr::FromV6(b) : IpAddr::FromV4(static_cast<uint32_t>(rng()));
    }
    r.src_port = static_cast<uint16_t>(rng());
    r.dst_port = static_cast<uint16_t>(rng());
    r.proto = static_cast<uint8_t>(rng());
    r.qp = static_cast<uint32_t>(rng());
    r.bytes = rng();
    r.packets = rng();
    r.sampling_rate = 1 + static_cast<uint32_t>(rng() % 100000);
    r.point = ids[rng() % ids.size()];
    out.push_back(r);
  }
  return out;
}

std::string WriteIpfix(const std::vector<FlowRecord>& records, const PointTable& points,
                       uint32_t domain = 1) {
  std::ostringstream out;
  IpfixFileWriter w(&out, &points, domain);
  for (const auto& r : records) w.OnRecord(r);
  EXPECT_TRUE(w.Finish().has_value());
  return out.str();
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

TEST(IpfixFile, RandomRecordsRoundTripExactlyAcrossManyMessages) {
  PointTable points;
  auto records = RandomRecords(30'000, 42, &points);
  std::string file = WriteIpfix(records, points);
  // Several messages, each at most 65535 bytes, each a version-10 header.
  size_t messages = 0;
  for (size_t off = 0; off < file.size(); ++messages) {
    ASSERT_LE(off + 4, file.size());
    EXPECT_EQ(file[off], 0);
    EXPECT_EQ(file[off + 1], 10);
    size_t len = (uint8_t(file[off + 2]) << 8) | uint8_t(file[off + 3]);
    ASSERT_GE(len, 16u);
    off += len;
  }
  EXPECT_GT(messages, 20u);
  Collector sink;
  PointTable points2;
  Stats stats;
  auto n = ReadIpfixBuffer(Bytes(file), "rt.ipfix", &sink, &points2, &stats);
  ASSERT_TRUE(n.has_value()) << n.error().message;
  EXPECT_EQ(*n, records.size());
  EXPECT_EQ(stats.SkippedTotal(), 0u);
  EXPECT_EQ(stats.Get(Stat::records_read), records.size());
  ASSERT_EQ(sink.records.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSame(records[i], sink.records[i], points, points2);
    if (HasFailure()) break;
  }
}

TEST(IpfixFile, ReadsLargeFileInChunks) {
  PointTable points;
  auto records = RandomRecords(120'000, 7, &points);
  std::string file = WriteIpfix(records, points);
  ASSERT_GT(file.size(), size_t{8} << 20);
  std::string path = prism::testing::UniqueTempPath("ipfix_large", ".ipfix");
  {
    std::ofstream f(path, std::ios::binary);
    f << file;
  }
  Collector sink;
  PointTable points2;
  Stats stats;
  auto n = ReadIpfixFile(path, &sink, &points2, &stats);
  ASSERT_TRUE(n.has_value()) << n.error().message;
  ASSERT_EQ(sink.records.size(), records.size());
  EXPECT_EQ(stats.SkippedTotal(), 0u);
  for (size_t i = 0; i < records.size(); i += 101) {
    ExpectSame(records[i], sink.records[i], points, points2);
  }
  std::filesystem::remove(path);

  auto missing = ReadIpfixFile(path, &sink, &points2, &stats);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(IpfixFile, CsvToIpfixToCsvIsByteIdentical) {
  PointTable points;
  auto records = RandomRecords(5'000, 3, &points);
  std::ostringstream csv1;
  {
    FlowCsvWriter w(&csv1, &points);
    for (const auto& r : records) w.OnRecord(r);
  }
  // CSV -> records -> IPFIX.
  PointTable p1;
  std::ostringstream ipfix;
  IpfixFileWriter iw(&ipfix, &p1);
  ASSERT_TRUE(ReadFlowCsvBuffer(csv1.str(), "a.csv", &iw, &p1, nullptr).has_value());
  ASSERT_TRUE(iw.Finish().has_value());
  // IPFIX -> records -> CSV.
  PointTable p2;
  std::ostringstream csv2;
  {
    FlowCsvWriter w(&csv2, &p2);
    std::string data = ipfix.str();
    auto n = ReadIpfixBuffer(Bytes(data), "a.ipfix", &w, &p2, nullptr);
    ASSERT_TRUE(n.has_value()) << n.error().message;
    EXPECT_EQ(*n, records.size());
  }
  EXPECT_EQ(csv1.str().size(), csv2.str().size());
  EXPECT_TRUE(csv1.str() == csv2.str());
}

TEST(IpfixFile, EmptyWriterStillWritesAValidTemplatesOnlyFile) {
  PointTable points;
  std::string file = WriteIpfix({}, points);
  ASSERT_GE(file.size(), 16u);
  Stats stats;
  Collector sink;
  auto n = ReadIpfixBuffer(Bytes(file), "e.ipfix", &sink, &points, &stats);
  ASSERT_FALSE(n.has_value());  // no record: unusable as a whole
  EXPECT_EQ(n.error().code, ErrorCode::kDataLoss);
  EXPECT_EQ(stats.SkippedTotal(), 0u);  // but nothing in it was bad

  auto empty = ReadIpfixBuffer({}, "z.ipfix", &sink, &points, &stats);
  ASSERT_FALSE(empty.has_value());
  EXPECT_THAT(empty.error().message, HasSubstr("z.ipfix"));
}

// Two messages (two domains), 6 records each.
std::string SmallFile(PointTable* points, std::vector<FlowRecord>* records, size_t* first_len) {
  auto a = RandomRecords(6, 11, points);
  auto b = RandomRecords(6, 12, points);
  std::string fa = WriteIpfix(a, *points, 1);
  std::string fb = WriteIpfix(b, *points, 2);
  *first_len = fa.size();
  records->assign(a.begin(), a.end());
  records->insert(records->end(), b.begin(), b.end());
  return fa + fb;
}

TEST(IpfixFile, EveryTruncationIsSafeAndCounted) {
  PointTable points;
  std::vector<FlowRecord> records;
  size_t first_len = 0;
  std::string file = SmallFile(&points, &records, &first_len);
  for (size_t len = 0; len < file.size(); ++len) {
    SCOPED_TRACE(len);
    Collector sink;
    PointTable p2;
    Stats stats;
    ::testing::internal::CaptureStderr();
    auto n = ReadIpfixBuffer(Bytes(file).first(len), "t.ipfix", &sink, &p2, &stats);
    ::testing::internal::GetCapturedStderr();
    if (len == first_len) {  // a clean message boundary
      ASSERT_TRUE(n.has_value());
      EXPECT_EQ(*n, 6u);
      EXPECT_EQ(stats.SkippedTotal(), 0u);
      continue;
    }
    EXPECT_LT(sink.records.size(), records.size());
    if (len > 0) {
      EXPECT_EQ(stats.Get(Stat::ipfix_bad_message), 1u);
    }
    // What was delivered is a prefix of the records, unchanged.
    for (size_t i = 0; i < sink.records.size(); ++i) {
      ExpectSame(records[i], sink.records[i], points, p2);
    }
    EXPECT_EQ(n.has_value(), !sink.records.empty());
  }
}

TEST(IpfixFile, RandomByteFlipsNeverCrash) {
  PointTable points;
  std::vector<FlowRecord> records;
  size_t first_len = 0;
  std::string file = SmallFile(&points, &records, &first_len);
  std::mt19937 rng(1234);
  uint64_t skipped = 0, delivered = 0;
  for (int iter = 0; iter < 5'000; ++iter) {
    std::string garbled = file;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      garbled[rng() % garbled.size()] ^= static_cast<char>(1 + rng() % 255);
    }
    Collector sink;
    PointTable p2;
    Stats stats;
    ::testing::internal::CaptureStderr();
    auto n = ReadIpfixBuffer(Bytes(garbled), "f.ipfix", &sink, &p2, &stats);
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(n.has_value(), !sink.records.empty());
    EXPECT_LE(sink.records.size(), garbled.size());
    skipped += stats.SkippedTotal();
    delivered += sink.records.size();
  }
  EXPECT_GT(skipped, 500u);
  EXPECT_GT(delivered, 0u);
}

TEST(IpfixFile, BadFirstHeaderResynchronizesOnTheNextMessage) {
  PointTable points;
  std::vector<FlowRecord> records;
  size_t first_len = 0;
  std::string file = SmallFile(&points, &records, &first_len);
  file[1] = 9;  // version 9 in the first message
  Collector sink;
  PointTable p2;
  Stats stats;
  ::testing::internal::CaptureStderr();
  auto n = ReadIpfixBuffer(Bytes(file), "r.ipfix", &sink, &p2, &stats);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(n.has_value()) << n.error().message;
  EXPECT_EQ(*n, 6u);
  EXPECT_EQ(stats.Get(Stat::ipfix_bad_message), 1u);
  EXPECT_THAT(err, HasSubstr("r.ipfix: byte 0: expected IPFIX version 10, got 9"));
  for (size_t i = 0; i < 6; ++i) {
    ExpectSame(records[6 + i], sink.records[i], points, p2);
  }
}

TEST(IpfixFile, DataSetWithUnknownTemplateIsCounted) {
  std::string msg =
      MsgBuilder().Message(5).Set(300).U32(0x0A000001).U32(0x0A000002).EndSet().EndMessage().str();
  Collector sink;
  PointTable points;
  Stats stats;
  ::testing::internal::CaptureStderr();
  auto n = ReadIpfixBuffer(Bytes(msg), "u.ipfix", &sink, &points, &stats);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(n.has_value());
  EXPECT_EQ(n.error().code, ErrorCode::kDataLoss);
  EXPECT_EQ(stats.Get(Stat::ipfix_unknown_template), 1u);
  EXPECT_THAT(err, HasSubstr("u.ipfix: byte 16: expected a template for data set id 300 in "
                             "domain 5, got none seen before it"));
}

// Another exporter's layout: different order, seconds and milliseconds timestamps, reduced-size
// counters, unknown IANA / enterprise / variable-length fields, padding, an options template.
TEST(IpfixFile, ReadsForeignTemplatesGenerically) {
  uint8_t v6a[16] = {0x20, 0x01, 0x0d, 0xb8};
  uint8_t v6b[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  MsgBuilder b;
  // clang-format off
  b.Message(9)
      .Set(2)
      .U16(400).U16(9)                 // template 400, 9 fields
      .Field(151, 4)                   // flowEndSeconds
      .Field(1, 4)                     // octetDeltaCount, reduced to 4 bytes
      .Field(77, 2, 9999)              // someone else's enterprise field
      .Field(12, 4)                    // destinationIPv4Address
      .Field(150, 4)                   // flowStartSeconds
      .Field(94, 0xFFFF)               // applicationDescription, variable length
      .Field(8, 4)                     // sourceIPv4Address
      .Field(kPrismIeRoceDestQp, 3, kPrismEnterpriseNumber)  // QP, reduced to 3 bytes
      .Field(2, 2)                     // packetDeltaCount, 2 bytes
      .U16(401).U16(5)                 // template 401, 5 fields
      .Field(153, 8)                   // flowEndMilliseconds
      .Field(152, 8)                   // flowStartMilliseconds
      .Field(27, 16).Field(28, 16)     // IPv6 addresses
      .Field(85, 8)                    // octetTotalCount
      .EndSet()
      .Set(3)                          // options template 402, scope observationDomainId
      .U16(402).U16(2).U16(1).Field(149, 4).Field(40, 8)
      .EndSet()
      .Set(400)
      .U32(1'700'000'010).U32(123456).U16(7).U32(0x0A000002).U32(1'700'000'000)
      .U8(3).Str("abc").U32(0x0A000001).U8(0).U8(1).U8(2).U16(42)
      .U32(1'700'000'020).U32(5).U16(7).U32(0x0A000004).U32(1'700'000'011)
      .U8(255).U16(300).Str(std::string(300, 'z')).U32(0x0A000003).U8(0).U8(0).U8(9).U16(1)
      .U8(0).U8(0)                     // padding
      .EndSet()
      .Set(402)
      .U32(9).U64(100)
      .EndSet()
      .Set(401)
      .U64(1'700'000'000'123ull).U64(1'700'000'000'100ull);
  // clang-format on
  for (uint8_t x : v6a) b.U8(x);
  for (uint8_t x : v6b) b.U8(x);
  b.U64(77).EndSet().EndMessage();
  std::string msg = b.str();

  Collector sink;
  PointTable points;
  Stats stats;
  auto n = ReadIpfixBuffer(Bytes(msg), "foreign.ipfix", &sink, &points, &stats);
  ASSERT_TRUE(n.has_value()) << n.error().message;
  ASSERT_EQ(sink.records.size(), 3u);
  const FlowRecord& a = sink.records[0];
  EXPECT_EQ(a.src, IpAddr::FromV4(0x0A000001));
  EXPECT_EQ(a.dst, IpAddr::FromV4(0x0A000002));
  EXPECT_EQ(a.start_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(a.end_ns, 1'700'000'010'000'000'000);
  EXPECT_EQ(a.bytes, 123456u);
  EXPECT_EQ(a.qp, 0x000102u);
  EXPECT_EQ(a.packets, 42u);
  EXPECT_EQ(a.sampling_rate, 1u);
  EXPECT_EQ(a.point, kNoPoint);
  EXPECT_EQ(sink.records[1].qp, 9u);
  EXPECT_EQ(sink.records[1].src, IpAddr::FromV4(0x0A000003));
  const FlowRecord& c = sink.records[2];
  EXPECT_EQ(c.start_ns, 1'700'000'000'100'000'000);
  EXPECT_EQ(c.end_ns, 1'700'000'000'123'000'000);
  EXPECT_EQ(c.src, IpAddr::FromV6(v6a));
  EXPECT_EQ(c.dst, IpAddr::FromV6(v6b));
  EXPECT_EQ(c.bytes, 77u);
  EXPECT_EQ(stats.Get(Stat::ipfix_options_record), 1u);
  EXPECT_EQ(stats.SkippedTotal(), 0u);
}

TEST(IpfixFile, HostileSetsAndTemplatesAreCountedWithoutHanging) {
  MsgBuilder b;
  // clang-format off
  // Message 1: a zero-length set stops the message.
  b.Message(1).U16(256).U16(0).U32(0).EndMessage();
  // Message 2: a set longer than its message.
  b.Message(1).U16(2).U16(400).U32(0).EndMessage();
  // Message 3: a template whose fields describe 0 bytes, then data for it; a template with a
  // field count past the set; then a set id 1 (NetFlow v9's).
  b.Message(1)
      .Set(2).U16(500).U16(1).Field(210, 0).EndSet()
      .Set(500).U32(0).EndSet()
      .Set(2).U16(501).U16(60).Field(8, 4).EndSet()
      .Set(1).U32(0).EndSet()
      .EndMessage();
  // Message 4: a template missing the end time, and a record running past its set.
  b.Message(1)
      .Set(2)
      .U16(600).U16(4).Field(8, 4).Field(12, 4).Field(150, 4).Field(1, 8)
      .U16(601).U16(2).Field(8, 4).Field(82, 0xFFFF)
      .EndSet()
      .Set(600).U32(1).U32(2).U32(3).U64(4).EndSet()
      .Set(601).U32(1).U8(200).Str("short").EndSet()
      .EndMessage();
  // clang-format on
  std::string data = b.str();
  Collector sink;
  PointTable points;
  Stats stats;
  ::testing::internal::CaptureStderr();
  auto n = ReadIpfixBuffer(Bytes(data), "h.ipfix", &sink, &points, &stats);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(n.has_value());
  EXPECT_EQ(stats.Get(Stat::ipfix_bad_message), 0u);
  EXPECT_EQ(stats.Get(Stat::ipfix_bad_set), 3u);
  EXPECT_EQ(stats.Get(Stat::ipfix_bad_template), 2u);
  EXPECT_EQ(stats.Get(Stat::ipfix_unknown_template), 1u);  // data for the rejected template 500
  EXPECT_EQ(stats.Get(Stat::ipfix_bad_record), 2u);
  EXPECT_THAT(err, HasSubstr("h.ipfix: byte 16: expected a set length between 4 and 8, got 0"));
  EXPECT_THAT(err, HasSubstr("more problems not shown"));
}

}  // namespace
}  // namespace prism::io

namespace prism::io {
namespace {

// `replay --repeat` resends encoded messages moved later: every record's start and end move by
// exactly the shift, nothing else changes (IPv4 and IPv6 records, short and long point names).
TEST(ShiftWrittenMessageTimes, MovesEveryRecordByWholeSeconds) {
  PointTable points;
  std::vector<FlowRecord> in;
  for (int i = 0; i < 6; ++i) {
    FlowRecord r;
    r.start_ns = 1'700'000'000'123'456'789 + i * 1'000'003;
    r.end_ns = r.start_ns + 777'777;
    r.src = *IpAddr::Parse(i % 2 ? "10.0.0.1" : "fd00::1");
    r.dst = *IpAddr::Parse(i % 2 ? "10.0.0.2" : "fd00::2");
    r.bytes = 1000 + i;
    r.qp = 7;
    r.point = points.Intern(i % 3 ? "spine00" : std::string(300, 'x'));
    in.push_back(r);
  }
  std::ostringstream out;
  {
    IpfixFileWriter w(&out, &points);
    for (const FlowRecord& r : in) w.OnRecord(r);
    ASSERT_TRUE(w.Finish().has_value());
  }
  std::string msg = out.str();
  auto shifted = ShiftWrittenMessageTimes(
      std::span<uint8_t>(reinterpret_cast<uint8_t*>(msg.data()), msg.size()), 32);
  ASSERT_TRUE(shifted.has_value()) << shifted.error().message;
  EXPECT_EQ(*shifted, in.size());
  Collector got;
  PointTable read_points;
  ASSERT_TRUE(ReadIpfixBuffer(Bytes(msg), "shifted", &got, &read_points, nullptr).has_value());
  ASSERT_EQ(got.records.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(got.records[i].start_ns, in[i].start_ns + 32'000'000'000);
    EXPECT_EQ(got.records[i].end_ns, in[i].end_ns + 32'000'000'000);
    EXPECT_EQ(got.records[i].bytes, in[i].bytes);
    EXPECT_EQ(got.records[i].src, in[i].src);
  }
  std::string bad = msg.substr(0, msg.size() - 1);
  EXPECT_FALSE(ShiftWrittenMessageTimes(
                   std::span<uint8_t>(reinterpret_cast<uint8_t*>(bad.data()), bad.size()), 1)
                   .has_value());
}

}  // namespace
}  // namespace prism::io
