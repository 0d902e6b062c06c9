// The export decoder's column path (decode_plan.h, planned_records.h) against its general path:
// the same messages decoded into a sink that takes batches and into one that does not must give
// the same rows, the same counters, the same point names and the same problem messages.
#include "ingest/ipfix/planned_records.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/record_batch.h"
#include "core/stats.h"
#include "ingest/ipfix/export_decoder.h"
#include "ingest/ipfix/ipfix_template.h"
#include "testing/packet_builder.h"

namespace prism::ingest {
namespace {

using namespace prism::testing;  // NOLINT

// What the FlowTable keeps of a record, with the point by name (ids are per PointTable).
using Row = std::tuple<int64_t, int64_t, IpAddr, IpAddr, uint64_t, uint32_t, std::string, uint32_t>;

struct RowSink : FlowSink, BatchSink {
  explicit RowSink(bool batches, const PointTable* points) : batches(batches), points(points) {}
  std::string Name(PointId p) const { return p == kNoPoint ? "-" : points->Name(p); }
  void OnRecord(const FlowRecord& r) override {
    rows.emplace_back(r.start_ns, r.end_ns, r.src, r.dst, r.bytes, r.qp, Name(r.point),
                      r.sampling_rate);
  }
  bool TakesBatches() const override { return batches; }
  void OnBatch(RecordBatch* b) override {
    ++batch_calls;
    for (size_t i = 0; i < b->size; ++i) {
      rows.emplace_back(b->start_ns[i], b->end_ns[i], b->src[i], b->dst[i], b->bytes[i], b->qp[i],
                        Name(b->point[i]), b->sampling_rate[i]);
    }
  }
  bool batches;
  const PointTable* points;
  std::vector<Row> rows;
  int batch_calls = 0;
};

struct Field {
  uint16_t id;
  uint16_t len;
  uint32_t pen = 0;
};

// One record's values, written per field as the template says.
struct Values {
  uint8_t src[16], dst[16];
  int64_t start_ns, end_ns;
  uint64_t bytes, packets, qp, sampling;
  std::string name;
};

void PutBe(Bytes* b, uint64_t v, size_t len) {
  for (size_t i = len; i-- > 0;) b->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void PutTime(Bytes* b, uint16_t id, int64_t ns) {
  if (id <= 151) PutBe(b, static_cast<uint64_t>(ns / 1'000'000'000), 4);
  else if (id <= 153) PutBe(b, static_cast<uint64_t>(ns / 1'000'000), 8);
  else PutBe(b, UnixNsToNtp(ns), 8);
}

void PutName(Bytes* b, const std::string& name, uint16_t len) {
  if (len != kVariableLength) {
    std::string fixed = name;
    fixed.resize(len, '\0');
    b->insert(b->end(), fixed.begin(), fixed.end());
    return;
  }
  if (name.size() < 255) {
    b->push_back(static_cast<uint8_t>(name.size()));
  } else {
    b->push_back(255);
    Put16(b, static_cast<uint16_t>(name.size()));
  }
  b->insert(b->end(), name.begin(), name.end());
}

Bytes Record(const std::vector<Field>& fields, const Values& v) {
  Bytes b;
  for (const Field& f : fields) {
    if (f.pen != 0) {
      if (f.id == kPrismIeRoceDestQp) PutBe(&b, v.qp, f.len);
      else PutName(&b, v.name, f.len);
      continue;
    }
    switch (f.id) {
      case 8: case 27: b.insert(b.end(), v.src + 16 - f.len, v.src + 16); break;
      case 12: case 28: b.insert(b.end(), v.dst + 16 - f.len, v.dst + 16); break;
      case 150: case 152: case 156: PutTime(&b, f.id, v.start_ns); break;
      case 151: case 153: case 157: PutTime(&b, f.id, v.end_ns); break;
      case 1: PutBe(&b, v.bytes, f.len); break;
      case 305: PutBe(&b, v.sampling, f.len); break;
      default: PutBe(&b, v.packets, f.len); break;  // packets, ports, protocol, anything else
    }
  }
  return b;
}

Bytes SetOf(uint16_t id, const Bytes& body) {
  Bytes b;
  Put16(&b, id);
  Put16(&b, static_cast<uint16_t>(4 + body.size()));
  Append(&b, body);
  return b;
}

Bytes TemplateSet(uint16_t tid, const std::vector<Field>& fields) {
  Bytes t;
  Put16(&t, tid);
  Put16(&t, static_cast<uint16_t>(fields.size()));
  for (const Field& f : fields) {
    Put16(&t, f.pen != 0 ? static_cast<uint16_t>(f.id | 0x8000) : f.id);
    Put16(&t, f.len);
    if (f.pen != 0) Put32(&t, f.pen);
  }
  return SetOf(2, t);
}

Bytes Message(uint32_t sequence, const std::vector<Bytes>& sets) {
  Bytes b;
  Put16(&b, 10);
  Put16(&b, 0);
  Put32(&b, 1'700'000'000);
  Put32(&b, sequence);
  Put32(&b, 7);
  for (const Bytes& s : sets) Append(&b, s);
  b[2] = static_cast<uint8_t>(b.size() >> 8);
  b[3] = static_cast<uint8_t>(b.size());
  return b;
}

// Random values; addresses from a few dozen, so endpoints and names repeat as they do in traffic.
Values RandomValues(std::mt19937_64& rng, bool v6) {
  Values v{};
  auto addr = [&](uint8_t* out) {
    if (!v6) out[10] = out[11] = 0xff;
    for (int i = v6 ? 0 : 12; i < 16; ++i) out[i] = static_cast<uint8_t>(rng() % 3);
    out[15] = static_cast<uint8_t>(rng() % 40);
  };
  addr(v.src);
  addr(v.dst);
  v.start_ns = 1'600'000'000'000'000'000 + static_cast<int64_t>(rng() % 1'000'000'000'000);
  v.end_ns = v.start_ns + static_cast<int64_t>(rng() % 5'000'000'000);
  v.bytes = rng();
  v.packets = rng();
  v.qp = rng();
  v.sampling = rng() % 4 == 0 ? 0 : rng() % 5000;
  switch (rng() % 6) {  // the same few names, empty, all NULs, NUL-padded, past 255 bytes
    case 0: v.name = ""; break;
    case 1: v.name = "leaf-1"; break;
    case 2: v.name = "spine-2"; break;
    case 3: v.name = std::string(2, '\0'); break;
    case 4: v.name = std::string("leaf-1") + '\0'; break;
    default: v.name = std::string(300, 'x'); break;
  }
  return v;
}

struct Outcome {
  std::vector<Row> rows;
  std::array<uint64_t, static_cast<size_t>(Stat::kCount)> stats;
  std::string stderr_text;
  int batch_calls = 0;
  uint64_t records = 0;
};

Outcome Decode(const std::vector<Bytes>& messages, bool batches) {
  PointTable points;
  Stats stats;
  RowSink sink(batches, &points);
  ::testing::internal::CaptureStderr();
  {
    ExportDecoder d("t", &sink, &points, &stats);
    d.AddExporter(IpAddr::FromV4(0x7f000001), 1, "exporter");
    uint64_t offset = 0;
    for (const Bytes& m : messages) {
      d.DecodeMessage(m, 0, offset);
      offset += m.size();
    }
    d.Finish();
    Outcome out;
    out.records = d.records();
    out.stderr_text = ::testing::internal::GetCapturedStderr();
    out.rows = std::move(sink.rows);
    out.stats = stats.values();
    out.batch_calls = sink.batch_calls;
    return out;
  }
}

// `records` of template `fields` (id 300), `per_set` to a data set, three sets to a message, plus
// `extra_sets` (framed already) in the first message after the template.
std::vector<Bytes> Messages(const std::vector<Field>& fields, const std::vector<Bytes>& records,
                            size_t per_set, const std::vector<Bytes>& extra_sets = {}) {
  std::vector<Bytes> messages;
  std::vector<Bytes> sets{TemplateSet(300, fields)};
  sets.insert(sets.end(), extra_sets.begin(), extra_sets.end());
  uint32_t sequence = 0, in_message = 0;
  for (size_t i = 0; i < records.size(); i += per_set) {
    Bytes body;
    for (size_t j = i; j < std::min(records.size(), i + per_set); ++j, ++in_message) {
      Append(&body, records[j]);
    }
    sets.push_back(SetOf(300, body));
    if (sets.size() >= 3) {
      messages.push_back(Message(sequence, sets));
      sequence += in_message;
      in_message = 0;
      sets.clear();
    }
  }
  if (!sets.empty()) messages.push_back(Message(sequence, sets));
  return messages;
}

void ExpectSame(const std::vector<Bytes>& messages, bool expect_batches = true) {
  const Outcome slow = Decode(messages, false);
  const Outcome fast = Decode(messages, true);
  EXPECT_EQ(slow.batch_calls, 0);
  EXPECT_EQ(fast.batch_calls > 0, expect_batches);
  ASSERT_EQ(fast.rows.size(), slow.rows.size());
  for (size_t i = 0; i < slow.rows.size(); ++i) ASSERT_EQ(fast.rows[i], slow.rows[i]) << "row " << i;
  EXPECT_EQ(fast.records, slow.records);
  for (size_t s = 0; s < slow.stats.size(); ++s) {
    EXPECT_EQ(fast.stats[s], slow.stats[s]) << kStatInfo[s].name;
  }
  EXPECT_EQ(fast.stderr_text, slow.stderr_text);
}

std::vector<Bytes> RandomRecords(const std::vector<Field>& fields, size_t n, bool v6,
                                 uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Bytes> records;
  for (size_t i = 0; i < n; ++i) records.push_back(Record(fields, RandomValues(rng, v6)));
  return records;
}

const Field kQp{kPrismIeRoceDestQp, 4, kPrismEnterpriseNumber};
const Field kVarName{kPrismIeObservationPoint, kVariableLength, kPrismEnterpriseNumber};

// llmprism's own writer's layout (io/ipfix_file.h).
const std::vector<Field> kWriterV4 = {{8, 4},  {12, 4}, {156, 8}, {157, 8}, {1, 8}, {2, 8}, {7, 2},
                                      {11, 2}, {4, 1},  {305, 4}, kQp,      kVarName};

Template Make(const std::vector<Field>& fields, bool options = false) {
  Template t;
  t.options = options;
  for (const Field& f : fields) {
    t.fields.push_back({ClassifyField(f.pen, f.id, f.len), f.len});
    t.min_record_bytes += f.len == kVariableLength ? 1 : f.len;
  }
  return t;
}

TEST(PlannedRecords, WriterLayoutGivesTheSameRows) {
  const auto records = RandomRecords(kWriterV4, 500, false, 1);
  ExpectSame(Messages(kWriterV4, records, 40));
}

TEST(PlannedRecords, OtherOrdersWidthsAndIpv6GiveTheSameRows) {
  // 4-byte octets, 2-byte QP, ms times, IPv6, destination first, an 8-byte fixed point name.
  const std::vector<Field> a = {{28, 16}, {153, 8}, {kPrismIeObservationPoint, 8, kPrismEnterpriseNumber},
                                {1, 4},   {27, 16}, {152, 8}, {kPrismIeRoceDestQp, 2, kPrismEnterpriseNumber}};
  ExpectSame(Messages(a, RandomRecords(a, 300, true, 2), 25));
  // Seconds, 2-byte octets, sampling in 2 bytes, no QP, no point name, an unknown field between.
  const std::vector<Field> b = {{150, 4}, {1, 2}, {12, 4}, {999, 3}, {151, 4}, {305, 2}, {8, 4}};
  ExpectSame(Messages(b, RandomRecords(b, 300, false, 3), 33));
}

TEST(PlannedRecords, DomainSamplingFromOptionsRecords) {
  // No sampling field: the domain's default from an options record (template 400: scope
  // observationDomainId(149, 4), samplingPacketInterval(305, 4)).
  const std::vector<Field> fields = {{8, 4}, {12, 4}, {156, 8}, {157, 8}, {1, 8}};
  Bytes ot;
  Put16(&ot, 400);
  Put16(&ot, 2);
  Put16(&ot, 1);
  Put16(&ot, 149); Put16(&ot, 4);
  Put16(&ot, 305); Put16(&ot, 4);
  Bytes opt;
  Put32(&opt, 7);
  Put32(&opt, 64);
  const auto messages = Messages(fields, RandomRecords(fields, 50, false, 4), 10,
                                 {SetOf(3, ot), SetOf(400, opt)});
  ExpectSame(messages);
  EXPECT_EQ(std::get<7>(Decode(messages, true).rows.back()), 64u);
}

TEST(PlannedRecords, ProblemsAreDescribedAsWithoutAPlan) {
  const std::vector<Field> fields = {{8, 4}, {12, 4}, {152, 8}, {153, 8}, {1, 8}, kVarName};
  auto records = RandomRecords(fields, 60, false, 5);
  // An end before its start, a millisecond time past what ns hold, and a last record whose point
  // name claims more bytes than its set has.
  std::mt19937_64 rng(6);
  Values back = RandomValues(rng, false);
  back.end_ns = back.start_ns - 1'000'000;
  records[7] = Record(fields, back);
  Bytes huge = Record(fields, RandomValues(rng, false));
  for (int i = 0; i < 8; ++i) huge[8 + i] = 0xff;  // flowStartMilliseconds
  records[21] = huge;
  Bytes cut = Record(fields, RandomValues(rng, false));
  cut.resize(32);
  cut.push_back(200);  // a 200-byte name, then the set ends
  records[39] = cut;
  ExpectSame(Messages(fields, records, 20));
  EXPECT_EQ(Decode(Messages(fields, records, 20), true).stats[size_t(Stat::ipfix_bad_record)], 3u);
}

TEST(PlannedRecords, RelativeTimesFallBackToTheGeneralPath) {
  // Delta µs times (158/159) need the export time: no plan, every record one by one.
  const std::vector<Field> fields = {{8, 4}, {12, 4}, {158, 4}, {159, 4}, {1, 8}};
  EXPECT_FALSE(CompileDecodePlan(Make(fields), 10).usable);
  std::vector<Bytes> records;
  for (uint32_t i = 0; i < 30; ++i) {
    Bytes r;
    Put32(&r, 0x0a000001 + i % 3);
    Put32(&r, 0x0a000010);
    Put32(&r, 2'000'000 + i);
    Put32(&r, 1'000'000);
    Put64(&r, 100 * i);
    records.push_back(r);
  }
  ExpectSame(Messages(fields, records, 10), /*expect_batches=*/false);
}

TEST(DecodePlan, PlainLayoutsOnly) {
  const DecodePlan writer = CompileDecodePlan(Make(kWriterV4), 10);
  ASSERT_TRUE(writer.usable);
  EXPECT_EQ(writer.fixed_bytes, 53u);
  EXPECT_TRUE(writer.trailing_is_point);
  EXPECT_EQ(writer.bytes.offset, 24u);
  EXPECT_EQ(writer.qp.offset, 49u);
  EXPECT_FALSE(CompileDecodePlan(Make(kWriterV4, true), 10).usable);  // options
  EXPECT_FALSE(CompileDecodePlan(Make(kWriterV4), 9).usable);          // v9: 0xFFFF is fixed
  // A variable-length field before the last, a flow field twice, a required field missing.
  EXPECT_FALSE(CompileDecodePlan(Make({{8, 4}, kVarName, {12, 4}, {156, 8}, {157, 8}, {1, 8}}), 10).usable);
  EXPECT_FALSE(CompileDecodePlan(Make({{8, 4}, {12, 4}, {156, 8}, {157, 8}, {1, 8}, {85, 8}}), 10).usable);
  EXPECT_FALSE(CompileDecodePlan(Make({{8, 4}, {12, 4}, {156, 8}, {157, 8}}), 10).usable);
  // Sampler ids and uptimes are resolved against context: general path.
  EXPECT_FALSE(CompileDecodePlan(Make({{8, 4}, {12, 4}, {156, 8}, {157, 8}, {1, 8}, {48, 1}}), 9).usable);
  EXPECT_FALSE(CompileDecodePlan(Make({{8, 4}, {12, 4}, {22, 4}, {21, 4}, {1, 4}}), 9).usable);
  EXPECT_TRUE(CompileDecodePlan(Make({{8, 4}, {12, 4}, {150, 4}, {151, 4}, {1, 4}}), 9).usable);
}

}  // namespace
}  // namespace prism::ingest
