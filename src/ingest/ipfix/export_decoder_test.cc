#include "ingest/ipfix/export_decoder.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "testing/packet_builder.h"

namespace prism::ingest {
namespace {

using namespace prism::testing;  // NOLINT

struct Collect : FlowSink {
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
  std::vector<FlowRecord> records;
};

// NetFlow v9 packet: header + flowsets (each already framed).
Bytes V9(uint32_t uptime_ms, uint32_t unix_s, uint32_t source_id, const std::vector<Bytes>& sets,
         uint32_t sequence = 1) {
  Bytes b;
  Put16(&b, 9);
  Put16(&b, static_cast<uint16_t>(sets.size()));
  Put32(&b, uptime_ms);
  Put32(&b, unix_s);
  Put32(&b, sequence);
  Put32(&b, source_id);
  for (const Bytes& s : sets) Append(&b, s);
  return b;
}

Bytes Set(uint16_t id, const Bytes& body) {
  Bytes b;
  Put16(&b, id);
  Put16(&b, static_cast<uint16_t>(4 + body.size()));
  Append(&b, body);
  return b;
}

Bytes Ipfix(uint32_t export_s, uint32_t domain, const std::vector<Bytes>& sets,
            uint32_t sequence = 1) {
  Bytes b;
  Put16(&b, 10);
  Put16(&b, 0);
  Put32(&b, export_s);
  Put32(&b, sequence);
  Put32(&b, domain);
  for (const Bytes& s : sets) Append(&b, s);
  b[2] = static_cast<uint8_t>(b.size() >> 8);
  b[3] = static_cast<uint8_t>(b.size());
  return b;
}

// v9 template 300: src(8) dst(12) bytes(1,4) pkts(2,4) first(22) last(21) sport dport proto
// samplerId(48,1).
Bytes V9Template() {
  Bytes t;
  Put16(&t, 300);
  Put16(&t, 10);
  for (auto [id, len] : std::vector<std::pair<uint16_t, uint16_t>>{
           {8, 4}, {12, 4}, {1, 4}, {2, 4}, {22, 4}, {21, 4}, {7, 2}, {11, 2}, {4, 1}, {48, 1}}) {
    Put16(&t, id);
    Put16(&t, len);
  }
  return Set(0, t);
}

Bytes V9Record(uint32_t first_ms, uint32_t last_ms, uint32_t bytes, uint8_t sampler) {
  Bytes r;
  Put32(&r, V4(10, 0, 0, 1));
  Put32(&r, V4(10, 0, 0, 2));
  Put32(&r, bytes);
  Put32(&r, 3);
  Put32(&r, first_ms);
  Put32(&r, last_ms);
  Put16(&r, 4000);
  Put16(&r, 4791);
  r.push_back(17);
  r.push_back(sampler);
  return r;
}

std::span<const uint8_t> S(const Bytes& b) { return b; }

TEST(ExportDecoder, NetflowV9UptimeTimesAndSamplerOptions) {
  Collect sink;
  PointTable points;
  Stats stats;
  ExportDecoder d("t", &sink, &points, &stats);
  uint32_t ex = d.AddExporter(IpAddr::FromV4(V4(127, 0, 0, 1)), 9999, "127.0.0.1");
  // Options template 400: scope System(1, 4), option sampler id (48, 1) + interval (50, 4).
  Bytes ot;
  Put16(&ot, 400);
  Put16(&ot, 4);
  Put16(&ot, 8);
  for (auto [id, len] : std::vector<std::pair<uint16_t, uint16_t>>{{1, 4}, {48, 1}, {50, 4}}) {
    Put16(&ot, id);
    Put16(&ot, len);
  }
  Put16(&ot, 0);  // padding
  Bytes opt;
  Put32(&opt, 0);
  opt.push_back(5);
  Put32(&opt, 1000);
  opt.resize(opt.size() + 3, 0);  // padding
  // Uptime 100000 ms at unix 1700000000 s: a flow 2000..1000 ms before the export.
  Bytes pkt = V9(100000, 1'700'000'000, 7,
                 {V9Template(), Set(1, ot), Set(400, opt),
                  Set(300, V9Record(98000, 99000, 1500, 5)), Set(300, V9Record(99500, 99600, 10, 6))});
  d.DecodeMessage(S(pkt), ex);
  ASSERT_EQ(sink.records.size(), 2u);
  const FlowRecord& r = sink.records[0];
  EXPECT_EQ(r.start_ns, 1'699'999'998'000'000'000);
  EXPECT_EQ(r.end_ns, 1'699'999'999'000'000'000);
  EXPECT_EQ(r.bytes, 1500u);
  EXPECT_EQ(r.packets, 3u);
  EXPECT_EQ(r.sampling_rate, 1000u);           // sampler 5 from the options record
  EXPECT_EQ(sink.records[1].sampling_rate, 1u);  // unknown sampler 6
  EXPECT_EQ(points.Name(r.point), "127.0.0.1");
  EXPECT_EQ(stats.Get(Stat::ipfix_options_record), 1u);
  EXPECT_EQ(stats.Get(Stat::netflow_v9_packets), 1u);
  EXPECT_EQ(stats.SkippedTotal(), 0u);
}

TEST(ExportDecoder, NetflowV9UptimeWrapsAround) {
  Collect sink;
  PointTable points;
  ExportDecoder d("t", &sink, &points, nullptr);
  // sysUptime wrapped to 500 ms; the flow ended at uptime 2^32 - 500 (1 s earlier).
  Bytes pkt = V9(500, 1'700'000'000, 1,
                 {V9Template(), Set(300, V9Record(0xFFFFFE0Cu - 1000, 0xFFFFFE0Cu, 1, 0))});
  d.DecodeMessage(S(pkt), 0);
  ASSERT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(sink.records[0].end_ns, 1'699'999'999'000'000'000);
  EXPECT_EQ(sink.records[0].start_ns, 1'699'999'998'000'000'000);
}

TEST(ExportDecoder, TemplatesArePerExporterAndDomain) {
  Collect sink;
  PointTable points;
  Stats stats;
  ExportDecoder d("t", &sink, &points, &stats);
  uint32_t a = d.AddExporter(IpAddr::FromV4(1), 1, "a");
  uint32_t b = d.AddExporter(IpAddr::FromV4(2), 1, "b");
  d.DecodeMessage(S(V9(100000, 1'700'000'000, 7, {V9Template()})), a);
  d.DecodeMessage(S(V9(100000, 1'700'000'000, 7, {Set(300, V9Record(1, 2, 3, 0))})), b);
  d.DecodeMessage(S(V9(100000, 1'700'000'000, 8, {Set(300, V9Record(1, 2, 3, 0))})), a);
  EXPECT_EQ(sink.records.size(), 0u);
  EXPECT_EQ(stats.Get(Stat::ipfix_unknown_template), 2u);
  d.DecodeMessage(S(V9(100000, 1'700'000'000, 7, {Set(300, V9Record(1, 2, 3, 0))})), a);
  EXPECT_EQ(sink.records.size(), 1u);
}

TEST(ExportDecoder, IpfixEnterpriseVarLenDeltaTimesAndSelectorSampling) {
  Collect sink;
  PointTable points;
  Stats stats;
  ExportDecoder d("t", &sink, &points, &stats);
  // Template 256: src dst octets(1,8) enterprise(0x8000|5, varlen, pen 9) start/end delta µs
  // (158/159, 4) selectorId(302, 2).
  Bytes t;
  Put16(&t, 256);
  Put16(&t, 7);
  Put16(&t, 8); Put16(&t, 4);
  Put16(&t, 12); Put16(&t, 4);
  Put16(&t, 1); Put16(&t, 8);
  Put16(&t, 0x8005); Put16(&t, 0xFFFF); Put32(&t, 9);
  Put16(&t, 158); Put16(&t, 4);
  Put16(&t, 159); Put16(&t, 4);
  Put16(&t, 302); Put16(&t, 2);
  // Options template 257: scope selectorId(302, 2); samplingSize(309) + population(310).
  Bytes ot;
  Put16(&ot, 257);
  Put16(&ot, 3);
  Put16(&ot, 1);
  Put16(&ot, 302); Put16(&ot, 2);
  Put16(&ot, 309); Put16(&ot, 4);
  Put16(&ot, 310); Put16(&ot, 4);
  Bytes o;
  Put16(&o, 0);  // scope value: selector 0 is skipped as scope... selector id read from options
  Put32(&o, 1);
  Put32(&o, 512);
  Bytes rec;
  Put32(&rec, 1);
  Put32(&rec, 2);
  Put64(&rec, 123456);
  rec.push_back(3);
  rec.insert(rec.end(), {'x', 'y', 'z'});
  Put32(&rec, 2'000'000);  // started 2 s before export
  Put32(&rec, 1'000'000);
  Put16(&rec, 0);
  Bytes msg = Ipfix(1'700'000'000, 3, {Set(2, t), Set(3, ot), Set(257, o), Set(256, rec)});
  d.DecodeMessage(S(msg), 0);
  ASSERT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(sink.records[0].bytes, 123456u);
  EXPECT_EQ(sink.records[0].start_ns, 1'699'999'998'000'000'000);
  EXPECT_EQ(sink.records[0].end_ns, 1'699'999'999'000'000'000);
  // The options record's scope is its selector id, so the interval is the domain default.
  EXPECT_EQ(sink.records[0].sampling_rate, 512u);
}

TEST(ExportDecoder, TemplateCacheIsBoundedInAll) {
  Collect sink;
  PointTable points;
  Stats stats;
  // Quotas lifted: only the bound for all exporters together holds.
  ExportDecoder d("t", &sink, &points, &stats, 0,
                  TemplateLimits{.max_templates = 10000,
                                 .max_templates_per_exporter = 1 << 20,
                                 .max_templates_per_source = 1 << 20});
  for (uint32_t dom = 0; dom < 40; ++dom) {
    Bytes body;
    for (uint16_t tid = 256; tid < 256 + 2000; ++tid) {
      Put16(&body, tid);
      Put16(&body, 1);
      Put16(&body, 1);
      Put16(&body, 4);
    }
    // Split into messages that fit 64 KiB.
    for (size_t off = 0; off < body.size(); off += 8 * 4000) {
      Bytes part(body.begin() + off, body.begin() + std::min(body.size(), off + 8 * 4000));
      d.DecodeMessage(S(Ipfix(1, dom, {Set(2, part)})), 0);
    }
  }
  EXPECT_EQ(stats.Get(Stat::ipfix_template_limit), 40u * 2000 - 10000);
  EXPECT_EQ(stats.Get(Stat::ipfix_template_quota), 0u);
}

// IPFIX messages carrying `count` templates from `first_tid` in `domain` (each template: one
// 4-byte octetDeltaCount).
std::vector<Bytes> IpfixTemplateFlood(uint16_t first_tid, int count, uint32_t domain = 0) {
  std::vector<Bytes> messages;
  Bytes body;
  for (int i = 0; i < count; ++i) {
    Put16(&body, static_cast<uint16_t>(first_tid + i));
    Put16(&body, 1);
    Put16(&body, 1);
    Put16(&body, 4);
    if (body.size() >= 8 * 4000 || i + 1 == count) {
      messages.push_back(Ipfix(1, domain, {Set(2, body)}));
      body.clear();
    }
  }
  return messages;
}

// The template of V9Record as IPFIX template 256, and a message with one such record.
Bytes IpfixTemplate256() {
  Bytes t;
  Put16(&t, 256);
  Put16(&t, 10);
  for (auto [id, len] : std::vector<std::pair<uint16_t, uint16_t>>{
           {8, 4}, {12, 4}, {1, 4}, {2, 4}, {150, 4}, {151, 4}, {7, 2}, {11, 2}, {4, 1}, {48, 1}}) {
    Put16(&t, id);
    Put16(&t, len);
  }
  return Set(2, t);
}
Bytes IpfixRecord256(uint32_t domain) {
  return Ipfix(1'700'000'000, domain, {Set(256, V9Record(1'700'000'000, 1'700'000'001, 99, 0))});
}

// Sequence numbers: IPFIX counts data records (options records too), NetFlow v9 export packets.
// A message ahead of its predecessor's number plus what it carried follows lost ones.
TEST(ExportDecoder, SequenceGapsAreLossOnTheWay) {
  Collect sink;
  PointTable points;
  Stats stats;
  ExportDecoder d("collector", &sink, &points, &stats, 0);
  const uint32_t ex = d.AddExporter(IpAddr::FromV4(V4(192, 0, 2, 10)), 4739, "leaf1");
  const Bytes one = V9Record(1'700'000'000, 1'700'000'001, 99, 0);
  Bytes two = one;
  Append(&two, one);
  d.DecodeMessage(S(Ipfix(1, 5, {IpfixTemplate256()}, 0)), ex);  // 0 records
  for (uint32_t seq = 0; seq < 8; seq += 2) d.DecodeMessage(S(Ipfix(1, 5, {Set(256, two)}, seq)), ex);
  d.DecodeMessage(S(Ipfix(1, 5, {Set(256, two)}, 11)), ex);  // records 8-10 lost
  d.DecodeMessage(S(Ipfix(1, 6, {IpfixTemplate256()}, 40)), ex);  // another domain
  for (uint32_t seq = 40; seq < 48; seq += 2) d.DecodeMessage(S(Ipfix(1, 6, {Set(256, two)}, seq)), ex);
  EXPECT_EQ(sink.records.size(), 18u);
  EXPECT_EQ(stats.Get(Stat::ipfix_records_lost), 3u);
  // A data set without its template: its records cannot be counted, so no loss is inferred.
  d.DecodeMessage(S(Ipfix(1, 6, {Set(300, two)}, 48)), ex);
  d.DecodeMessage(S(Ipfix(1, 6, {Set(256, two)}, 60)), ex);
  EXPECT_EQ(stats.Get(Stat::ipfix_records_lost), 3u);

  // NetFlow v9 counts packets.
  d.DecodeMessage(S(V9(100000, 1'700'000'000, 7, {V9Template()}, 10)), ex);
  for (uint32_t seq = 11; seq < 15; ++seq)
    d.DecodeMessage(S(V9(100000, 1'700'000'000, 7, {Set(300, V9Record(1, 2, 3, 0))}, seq)), ex);
  d.DecodeMessage(S(V9(100000, 1'700'000'000, 7, {Set(300, V9Record(1, 2, 3, 0))}, 17)), ex);
  EXPECT_EQ(stats.Get(Stat::netflow_v9_packets_lost), 2u);
}

// Hostile exporters flood the collector with 65,536 templates: one from a single domain, one
// spread over 64 domains. Each holds no more than its quotas, nothing fills the cache, and an
// honest exporter's template gets in and its records decode.
TEST(ExportDecoder, HostileExporterCannotStarveAnother) {
  Collect sink;
  PointTable points;
  Stats stats;
  ExportDecoder d("collector", &sink, &points, &stats, 0);
  const uint32_t one_domain = d.AddExporter(IpAddr::FromV4(V4(192, 0, 2, 66)), 4739, "evil1");
  const uint32_t many = d.AddExporter(IpAddr::FromV4(V4(192, 0, 2, 67)), 4739, "evil2");
  const uint32_t honest = d.AddExporter(IpAddr::FromV4(V4(192, 0, 2, 10)), 4739, "leaf1");
  for (const Bytes& m : IpfixTemplateFlood(256, 65280)) d.DecodeMessage(S(m), one_domain);
  EXPECT_EQ(stats.Get(Stat::ipfix_template_quota), 65280u - 1024);  // 1,024 per domain
  for (uint32_t domain = 0; domain < 64; ++domain) {
    for (const Bytes& m : IpfixTemplateFlood(256, 1024, domain)) d.DecodeMessage(S(m), many);
  }
  // 4,096 per address: the first 4 domains; the other 60 are refused.
  EXPECT_EQ(stats.Get(Stat::ipfix_template_quota), 65280u - 1024 + 60 * 1024);
  EXPECT_EQ(stats.Get(Stat::ipfix_template_limit), 0u);
  d.DecodeMessage(S(Ipfix(1, 5, {IpfixTemplate256()})), honest);
  d.DecodeMessage(S(IpfixRecord256(5)), honest);
  ASSERT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(sink.records[0].bytes, 99u);
  EXPECT_EQ(points.Name(sink.records[0].point), "leaf1");
  EXPECT_EQ(stats.Get(Stat::ipfix_unknown_template), 0u);
}

// Without quotas a flood fills the cache and the honest exporter's template is dropped: the
// failure the quotas prevent (same flood, limits lifted).
TEST(ExportDecoder, WithoutQuotasAFloodStarvesTheOthers) {
  Collect sink;
  PointTable points;
  Stats stats;
  TemplateLimits no_quota{.max_templates = 65536, .max_templates_per_exporter = 65536,
                          .max_templates_per_source = 65536};
  ExportDecoder d("collector", &sink, &points, &stats, 0, no_quota);
  const uint32_t hostile = d.AddExporter(IpAddr::FromV4(V4(192, 0, 2, 66)), 4739, "evil");
  const uint32_t honest = d.AddExporter(IpAddr::FromV4(V4(192, 0, 2, 10)), 4739, "leaf1");
  for (const Bytes& m : IpfixTemplateFlood(256, 65280)) d.DecodeMessage(S(m), hostile);
  for (const Bytes& m : IpfixTemplateFlood(256, 256, 1)) d.DecodeMessage(S(m), hostile);
  d.DecodeMessage(S(Ipfix(1, 5, {IpfixTemplate256()})), honest);
  d.DecodeMessage(S(IpfixRecord256(5)), honest);
  EXPECT_EQ(sink.records.size(), 0u);
  EXPECT_EQ(stats.Get(Stat::ipfix_template_limit), 1u);
  EXPECT_EQ(stats.Get(Stat::ipfix_unknown_template), 1u);
}

TEST(ExportDecoder, IpfixWithdrawals) {
  Collect sink;
  PointTable points;
  Stats stats;
  ExportDecoder d("t", &sink, &points, &stats, 0);
  d.DecodeMessage(S(Ipfix(1, 3, {IpfixTemplate256()})), 0);
  d.DecodeMessage(S(IpfixRecord256(3)), 0);
  ASSERT_EQ(sink.records.size(), 1u);
  // Template 256 withdrawn (field count 0): its records are unknown again.
  Bytes one;
  Put16(&one, 256);
  Put16(&one, 0);
  d.DecodeMessage(S(Ipfix(1, 3, {Set(2, one)})), 0);
  d.DecodeMessage(S(IpfixRecord256(3)), 0);
  EXPECT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(stats.Get(Stat::ipfix_template_withdrawn), 1u);
  EXPECT_EQ(stats.Get(Stat::ipfix_unknown_template), 1u);
  // Template id 2 with no fields withdraws every template of the domain (RFC 7011 §8.1).
  d.DecodeMessage(S(Ipfix(1, 3, {IpfixTemplate256()})), 0);
  for (const Bytes& m : IpfixTemplateFlood(300, 5, 3)) d.DecodeMessage(S(m), 0);
  Bytes all;
  Put16(&all, 2);
  Put16(&all, 0);
  d.DecodeMessage(S(Ipfix(1, 3, {Set(2, all)})), 0);
  EXPECT_EQ(stats.Get(Stat::ipfix_template_withdrawn), 1u + 6);
  EXPECT_EQ(stats.Get(Stat::ipfix_bad_template), 0u);
  d.DecodeMessage(S(IpfixRecord256(3)), 0);
  EXPECT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(stats.Get(Stat::ipfix_unknown_template), 2u);
}

// Over UDP, a template not resent within the lifetime expires; one that is resent lives on.
TEST(ExportDecoder, UnrefreshedTemplatesExpireOverUdp) {
  Collect sink;
  PointTable points;
  Stats stats;
  const int64_t kSec = 1'000'000'000;
  ExportDecoder d("collector", &sink, &points, &stats, 0,
                  TemplateLimits{.timeout_ns = kUdpTemplateTimeoutNs});
  const uint32_t a = d.AddExporter(IpAddr::FromV4(1), 1, "a");
  const uint32_t b = d.AddExporter(IpAddr::FromV4(2), 1, "b");
  d.SetClock(0);
  d.DecodeMessage(S(Ipfix(1, 0, {IpfixTemplate256()})), a);
  d.DecodeMessage(S(Ipfix(1, 0, {IpfixTemplate256()})), b);
  d.SetClock(1000 * kSec);  // b resends its template; a does not
  d.DecodeMessage(S(Ipfix(1, 0, {IpfixTemplate256()})), b);
  d.SetClock(1801 * kSec);
  d.DecodeMessage(S(IpfixRecord256(0)), a);
  d.DecodeMessage(S(IpfixRecord256(0)), b);
  ASSERT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(points.Name(sink.records[0].point), "b");
  EXPECT_EQ(stats.Get(Stat::ipfix_template_expired), 1u);
  EXPECT_EQ(stats.Get(Stat::ipfix_unknown_template), 1u);
}

// Files and captures (no lifetime) keep their templates whatever the clock says.
TEST(ExportDecoder, FilesNeverExpireTemplates) {
  Collect sink;
  PointTable points;
  Stats stats;
  ExportDecoder d("f.ipfix", &sink, &points, &stats, 0);
  d.DecodeMessage(S(Ipfix(1, 0, {IpfixTemplate256()})), 0);
  d.SetClock(int64_t{1} << 62);
  d.DecodeMessage(S(IpfixRecord256(0)), 0);
  EXPECT_EQ(sink.records.size(), 1u);
  EXPECT_EQ(stats.Get(Stat::ipfix_template_expired), 0u);
}

// What any datagram, however garbled, leaves behind: the record count agrees with the counter,
// no record ends before it starts or has a sampling rate below 1, and no more records come out
// than the datagram has bytes.
void ExpectSane(const ExportDecoder& d, const Collect& sink, const Stats& stats, size_t before,
                size_t datagram_bytes) {
  EXPECT_EQ(d.records(), sink.records.size());
  EXPECT_EQ(stats.Get(Stat::records_read), sink.records.size());
  EXPECT_LE(sink.records.size() - before, datagram_bytes);
  for (size_t i = before; i < sink.records.size(); ++i) {
    EXPECT_LE(sink.records[i].start_ns, sink.records[i].end_ns);
    EXPECT_GE(sink.records[i].sampling_rate, 1u);
  }
}

// Garbled datagrams (random bytes changed anywhere, some cut short) through one decoder: each
// keeps the invariants, and whatever a garbled template did to the cache, the intact datagram
// right after it (template and record) decodes to exactly its record again.
TEST(ExportDecoder, GarbledDatagramsNeverPoisonTheDecoder) {
  std::mt19937 rng(7);
  Collect sink;
  PointTable points;
  Stats stats;
  ExportDecoder d("t", &sink, &points, &stats, 0);
  const Bytes good = V9(100000, 1'700'000'000, 7, {V9Template(), Set(300, V9Record(1, 2, 3, 0))});
  d.DecodeMessage(S(good), 0);
  ASSERT_EQ(sink.records.size(), 1u);
  const FlowRecord want = sink.records[0];
  EXPECT_EQ(want.start_ns, (int64_t{1'700'000'000} * 1000 - (100000 - 1)) * 1'000'000);
  size_t garbled_records = 0;
  for (int i = 0; i < 5000; ++i) {
    Bytes b = good;
    int flips = 1 + rng() % 6;
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    if (rng() % 3 == 0) b.resize(rng() % b.size());
    size_t before = sink.records.size();
    d.DecodeMessage(S(b), 0);
    ExpectSane(d, sink, stats, before, b.size());
    garbled_records += sink.records.size() - before;
    before = sink.records.size();
    d.DecodeMessage(S(good), 0);
    ASSERT_EQ(sink.records.size(), before + 1) << "iteration " << i;
    const FlowRecord& r = sink.records.back();
    EXPECT_EQ(r.start_ns, want.start_ns);
    EXPECT_EQ(r.end_ns, want.end_ns);
    EXPECT_EQ(r.src, want.src);
    EXPECT_EQ(r.dst, want.dst);
    EXPECT_EQ(r.bytes, want.bytes);
    EXPECT_EQ(r.packets, want.packets);
  }
  EXPECT_GT(garbled_records, 500u);  // many garbled datagrams still carry a record
  EXPECT_GT(stats.SkippedTotal(), 1000u);  // and the others are counted
}

// Random values in the data record's fields (its framing intact): the record is decoded field
// for field as the bytes say — times resolved against the header's sysUptime — or, when it ends
// before it starts, counted as bad and not delivered.
TEST(ExportDecoder, RandomFieldValuesAreDecodedExactly) {
  std::mt19937 rng(8);
  Collect sink;
  PointTable points;
  Stats stats;
  ExportDecoder d("t", &sink, &points, &stats, 0);
  const uint32_t uptime = 3'000'000'000u, unix_s = 1'700'000'000;
  d.DecodeMessage(S(V9(uptime, unix_s, 7, {V9Template()})), 0);
  uint64_t bad_before = 0;
  for (int i = 0; i < 3000; ++i) {
    Bytes rec = V9Record(0, 0, 0, 0);
    for (uint8_t& byte : rec) byte = static_cast<uint8_t>(rng());
    const size_t before = sink.records.size();
    d.DecodeMessage(S(V9(uptime, unix_s, 7, {Set(300, rec)})), 0);
    auto be32 = [&](size_t at) {
      return uint32_t{rec[at]} << 24 | uint32_t{rec[at + 1]} << 16 | uint32_t{rec[at + 2]} << 8 |
             rec[at + 3];
    };
    auto at_uptime = [&](uint32_t ms) {
      return (int64_t{unix_s} * 1000 - static_cast<int32_t>(uptime - ms)) * 1'000'000;
    };
    const int64_t start = at_uptime(be32(16)), end = at_uptime(be32(20));
    if (end < start) {
      EXPECT_EQ(sink.records.size(), before);
      EXPECT_EQ(stats.Get(Stat::ipfix_bad_record), ++bad_before);
      continue;
    }
    ASSERT_EQ(sink.records.size(), before + 1);
    const FlowRecord& r = sink.records.back();
    EXPECT_EQ(r.src, IpAddr::FromV4(be32(0)));
    EXPECT_EQ(r.dst, IpAddr::FromV4(be32(4)));
    EXPECT_EQ(r.bytes, be32(8));
    EXPECT_EQ(r.packets, be32(12));
    EXPECT_EQ(r.start_ns, start);
    EXPECT_EQ(r.end_ns, end);
    EXPECT_EQ(r.src_port, (rec[24] << 8) | rec[25]);
    EXPECT_EQ(r.dst_port, (rec[26] << 8) | rec[27]);
    EXPECT_EQ(r.proto, rec[28]);
    EXPECT_EQ(r.sampling_rate, 1u);  // sampler rec[29]: no options record names it
  }
  EXPECT_GT(bad_before, 1000u);  // about half the random time pairs run backwards
  EXPECT_GT(sink.records.size(), 1000u);
}

TEST(ExportDecoder, LooksLikeExportDatagram) {
  Bytes v9 = V9(1, 2, 3, {V9Template()});
  EXPECT_TRUE(LooksLikeExportDatagram(v9, v9.size()));
  Bytes ipfix = Ipfix(1, 2, {V9Template()});
  EXPECT_TRUE(LooksLikeExportDatagram(ipfix, ipfix.size()));
  EXPECT_FALSE(LooksLikeExportDatagram(ipfix, ipfix.size() + 1));
  Bytes dns = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  EXPECT_FALSE(LooksLikeExportDatagram(dns, dns.size()));
}

}  // namespace
}  // namespace prism::ingest
