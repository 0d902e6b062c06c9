#include "scaleout/record_batch.h"

#include <gtest/gtest.h>
#include <zstd.h>

namespace prism::scaleout {
namespace {

FlowRecord Record(int i) {
  FlowRecord r;
  r.start_ns = 1'700'000'000'000'000'000 + int64_t(i) * 1'000'003;
  r.end_ns = r.start_ns + 20'000 + i;
  r.src = IpAddr::FromV4(0x0A000001 + uint32_t(i % 7));
  r.dst = i % 5 == 0 ? *IpAddr::Parse("fd00::17") : IpAddr::FromV4(0x0A000101 + uint32_t(i % 3));
  r.src_port = uint16_t(49152 + i);
  r.dst_port = 4791;
  r.proto = 17;
  r.qp = uint32_t(0x100 + i);
  r.bytes = uint64_t(1) << (10 + i % 20);
  r.packets = uint64_t(1 + i);
  r.sampling_rate = i % 4 == 0 ? 1000 : 1;
  return r;
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(RecordBatch, EveryFieldAndPointNameComesBack) {
  RecordBatchWriter w;
  const char* points[] = {"leaf-p000-r0", "spine03", ""};
  for (int i = 0; i < 1000; ++i) w.Add(Record(i), points[i % 3]);
  EXPECT_EQ(w.size(), 1000u);
  const std::string bytes = w.Finish();
  EXPECT_EQ(w.size(), 0u);
  // Columns compress: far below the 81 bytes per record they take unpacked.
  EXPECT_LT(bytes.size(), 1000u * 40);
  auto batch = DecodeRecordBatch(Bytes(bytes));
  ASSERT_TRUE(batch) << batch.error().message;
  ASSERT_EQ(batch->records.size(), 1000u);
  EXPECT_EQ(batch->point_names, (std::vector<std::string>{"leaf-p000-r0", "spine03"}));
  for (int i = 0; i < 1000; ++i) {
    FlowRecord want = Record(i);
    want.point = i % 3 == 2 ? kNoPoint : PointId(i % 3);
    const FlowRecord& got = batch->records[size_t(i)];
    EXPECT_EQ(got.start_ns, want.start_ns);
    EXPECT_EQ(got.end_ns, want.end_ns);
    EXPECT_EQ(got.src, want.src);
    EXPECT_EQ(got.dst, want.dst);
    EXPECT_EQ(got.src_port, want.src_port);
    EXPECT_EQ(got.dst_port, want.dst_port);
    EXPECT_EQ(got.proto, want.proto);
    EXPECT_EQ(got.qp, want.qp);
    EXPECT_EQ(got.bytes, want.bytes);
    EXPECT_EQ(got.packets, want.packets);
    EXPECT_EQ(got.sampling_rate, want.sampling_rate);
    EXPECT_EQ(got.point, want.point) << i;
  }
}

TEST(RecordBatch, DecodedIntoATableRenumbersPointsByName) {
  RecordBatchWriter w;
  const char* points[] = {"leaf-p000-r0", "spine03", ""};
  for (int i = 0; i < 9; ++i) w.Add(Record(i), points[i % 3]);
  PointTable table;
  // The reader's table already knows one of the names, under another id than in the batch.
  const PointId spine = table.Intern("spine03");
  auto batch = DecodeRecordBatchInto(Bytes(w.Finish()), &table);
  ASSERT_TRUE(batch) << batch.error().message;
  ASSERT_EQ(table.size(), 2u);
  const PointId leaf = spine == 0 ? 1 : 0;
  EXPECT_EQ(table.Name(leaf), "leaf-p000-r0");
  for (int i = 0; i < 9; ++i) {
    const PointId want = i % 3 == 0 ? leaf : i % 3 == 1 ? spine : kNoPoint;
    EXPECT_EQ(batch->records[size_t(i)].point, want) << i;
  }
  EXPECT_FALSE(DecodeRecordBatchInto(Bytes("short"), &table));
  EXPECT_EQ(table.size(), 2u);
}

TEST(RecordBatch, EmptyBatch) {
  RecordBatchWriter w;
  auto batch = DecodeRecordBatch(Bytes(w.Finish()));
  ASSERT_TRUE(batch) << batch.error().message;
  EXPECT_TRUE(batch->records.empty());
}

TEST(RecordBatch, BadInputIsAnErrorWithItsOffset) {
  RecordBatchWriter w;
  for (int i = 0; i < 10; ++i) w.Add(Record(i), "leaf");
  const std::string good = w.Finish();

  auto short_header = DecodeRecordBatch(Bytes(good.substr(0, 12)));
  ASSERT_FALSE(short_header);
  EXPECT_NE(short_header.error().message.find("byte 0"), std::string::npos);

  std::string version = good;
  version[4] = 9;
  auto v = DecodeRecordBatch(Bytes(version));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("byte 4: expected version 1"), std::string::npos);

  auto truncated = DecodeRecordBatch(Bytes(good.substr(0, good.size() - 3)));
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().message.find("byte 20: expected a zstd frame"), std::string::npos);

  std::string count = good;
  count[8] = 11;  // 11 records announced, 10 encoded
  auto c = DecodeRecordBatch(Bytes(count));
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("byte 8"), std::string::npos) << c.error().message;

  std::string huge = good;
  huge[11] = char(0x7F);  // ~2 G records: refused before any allocation
  EXPECT_FALSE(DecodeRecordBatch(Bytes(huge)));
}

// What a broken link or disk makes of a batch: every truncation and every single-byte change is
// either decoded (a change in a column's value) or refused with a message, never a crash or an
// over-read (scripts/sanitize.sh runs it under ASan).
TEST(RecordBatch, EveryTruncationAndByteChangeIsHandled) {
  RecordBatchWriter w;
  for (int i = 0; i < 20; ++i) w.Add(Record(i), i % 2 ? "leaf" : "");
  const std::string good = w.Finish(0);
  size_t refused = 0;
  for (size_t n = 0; n < good.size(); ++n) {
    auto batch = DecodeRecordBatch(Bytes(good.substr(0, n)));
    EXPECT_FALSE(batch) << n;
    if (!batch) {
      EXPECT_NE(batch.error().message.find("byte "), std::string::npos);
    }
  }
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t x : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF)}) {
      std::string bad = good;
      bad[i] = char(uint8_t(bad[i]) ^ x);
      auto batch = DecodeRecordBatch(Bytes(bad));
      if (!batch) {
        ++refused;
      } else {
        for (const FlowRecord& r : batch->records)
          EXPECT_TRUE(r.point == kNoPoint || r.point < batch->point_names.size());
      }
    }
  }
  EXPECT_GT(refused, 0u);
}

// A batch made by hand: one point name, one record whose point index is 5.
TEST(RecordBatch, PointIndexBeyondTheNamesIsRefused) {
  std::string body("\x01\x00" "a", 3);
  body.append(81 - 4, '\0');
  body.append("\x05\x00\x00\x00", 4);
  std::string bytes("LPRB\x01\0\0\0", 8);
  for (uint32_t v : {1u, 1u, uint32_t(body.size())}) bytes.append(reinterpret_cast<char*>(&v), 4);
  std::string frame(ZSTD_compressBound(body.size()), '\0');
  frame.resize(ZSTD_compress(frame.data(), frame.size(), body.data(), body.size(), 1));
  bytes += frame;
  auto batch = DecodeRecordBatch(Bytes(bytes));
  ASSERT_FALSE(batch);
  EXPECT_NE(batch.error().message.find("record 0 names point 5 of 1"), std::string::npos)
      << batch.error().message;
  // The same with index 0 decodes.
  body[body.size() - 4] = 0;
  bytes.resize(20);
  frame.assign(ZSTD_compressBound(body.size()), '\0');
  frame.resize(ZSTD_compress(frame.data(), frame.size(), body.data(), body.size(), 1));
  bytes += frame;
  auto ok = DecodeRecordBatch(Bytes(bytes));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->records[0].point, 0u);
}

}  // namespace
}  // namespace prism::scaleout
