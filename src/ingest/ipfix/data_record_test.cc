#include "ingest/ipfix/data_record.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/ntp_time.h"
#include "testing/packet_builder.h"

namespace prism::ingest {
namespace {

using namespace prism::testing;  // NOLINT

Template Make(std::vector<TemplateField> fields) {
  Template t;
  t.fields = std::move(fields);
  for (const TemplateField& f : t.fields)
    t.min_record_bytes += f.len == kVariableLength ? 1 : f.len;
  return t;
}

bool Read(const Template& t, bool ipfix, const Bytes& b, RawRecord* out, size_t* used = nullptr) {
  const uint8_t* p = b.data();
  bool ok = ReadDataRecord(t, ipfix, &p, b.data() + b.size(), out);
  if (used != nullptr) *used = static_cast<size_t>(p - b.data());
  return ok;
}

TEST(DataRecord, ReadsFieldsAsSent) {
  using A = FieldAction;
  Template t = Make({{A::kSrcV4, 4},
                     {A::kDstV4, 4},
                     {A::kBytes, 3},
                     {A::kPackets, 2},
                     {A::kStartNtp, 8},
                     {A::kEndMs, 8},
                     {A::kSrcPort, 2},
                     {A::kProto, 1},
                     {A::kQp, 3},
                     {A::kSkip, 5},
                     {A::kSamplerId, 1},
                     {A::kStartUptimeMs, 4}});
  Bytes b;
  Put32(&b, V4(10, 0, 0, 1));
  Put32(&b, V4(10, 0, 0, 2));
  b.insert(b.end(), {0x01, 0x00, 0x00});  // 65536 bytes, reduced-size
  Put16(&b, 7);
  Put64(&b, UnixNsToNtp(1'700'000'000'123'456'789));
  Put64(&b, 1'700'000'001'000);
  Put16(&b, 4791);
  b.push_back(17);
  b.insert(b.end(), {0x00, 0x01, 0x02});
  b.insert(b.end(), 5, 0xEE);
  b.push_back(9);
  Put32(&b, 5000);
  RawRecord r;
  size_t used = 0;
  ASSERT_TRUE(Read(t, true, b, &r, &used));
  EXPECT_EQ(used, b.size());
  EXPECT_EQ(r.flow.src, IpAddr::FromV4(V4(10, 0, 0, 1)));
  EXPECT_EQ(r.flow.dst, IpAddr::FromV4(V4(10, 0, 0, 2)));
  EXPECT_EQ(r.flow.bytes, 65536u);
  EXPECT_EQ(r.flow.packets, 7u);
  EXPECT_EQ(r.flow.start_ns, 1'700'000'000'123'456'789);
  EXPECT_EQ(r.flow.end_ns, 1'700'000'001'000'000'000);
  EXPECT_EQ(r.flow.src_port, 4791);
  EXPECT_EQ(r.flow.proto, 17);
  EXPECT_EQ(r.flow.qp, 0x102u);
  EXPECT_TRUE(r.has_sampler);
  EXPECT_EQ(r.sampler, 9u);
  EXPECT_EQ(r.uptime_start_ms, 5000);  // kept aside: needs the exporter's boot time
  EXPECT_EQ(r.have, kHaveRequired);
}

TEST(DataRecord, VariableLengthOnlyInIpfix) {
  Template t = Make({{FieldAction::kPointName, kVariableLength}, {FieldAction::kBytes, 1}});
  Bytes short_form = {3, 'a', 'b', 'c', 42};
  RawRecord r;
  ASSERT_TRUE(Read(t, true, short_form, &r));
  EXPECT_EQ(r.point_name, "abc");
  EXPECT_EQ(r.flow.bytes, 42u);
  Bytes long_form = {255, 0, 2, 'x', 'y', 43};
  RawRecord r2;
  ASSERT_TRUE(Read(t, true, long_form, &r2));
  EXPECT_EQ(r2.point_name, "xy");
  EXPECT_EQ(r2.flow.bytes, 43u);
  // NetFlow v9: 0xFFFF is a fixed length, which these bytes cannot hold.
  RawRecord r3;
  EXPECT_FALSE(Read(t, false, short_form, &r3));
  // A length that runs past the end.
  Bytes cut = {9, 'a', 'b'};
  RawRecord r4;
  EXPECT_FALSE(Read(t, true, cut, &r4));
}

TEST(DataRecord, TimesOutOfRangeAreLeftUnset) {
  Template t = Make({{FieldAction::kStartMs, 8}, {FieldAction::kSystemInitMs, 8}});
  Bytes b;
  Put64(&b, ~uint64_t{0});
  Put64(&b, ~uint64_t{0});
  RawRecord r;
  ASSERT_TRUE(Read(t, true, b, &r));
  EXPECT_EQ(r.have & kHaveStart, 0u);
  EXPECT_EQ(r.system_init_ms, -1);
}

TEST(DataRecord, NetflowV9UptimesAgainstSysUptimeAcrossAWrap) {
  RawRecord r;
  r.uptime_start_ms = 0xFFFFFE0Cu - 1000;  // 1.5 s before the header's sysUptime (wrapped)
  r.uptime_end_ms = 0xFFFFFE0Cu;
  ResolveTimes({.version = 9, .export_s = 1'700'000'000, .sys_uptime_ms = 500}, nullptr, &r);
  EXPECT_EQ(r.flow.start_ns, 1'699'999'998'000'000'000);
  EXPECT_EQ(r.flow.end_ns, 1'699'999'999'000'000'000);
  EXPECT_EQ(r.have, kHaveStart | kHaveEnd);
}

TEST(DataRecord, IpfixUptimesNeedTheExportersBoot) {
  const MessageTimes m{.version = 10, .export_s = 1'700'000'000, .sys_uptime_ms = 0};
  RawRecord r;
  r.uptime_start_ms = 1000;
  r.uptime_end_ms = 2000;
  ResolveTimes(m, nullptr, &r);  // no systemInitTime anywhere
  EXPECT_EQ(r.have, 0u);
  DomainState domain;
  domain.system_init_ms = 1'600'000'000'000;
  ResolveTimes(m, &domain, &r);
  EXPECT_EQ(r.flow.start_ns, 1'600'000'001'000'000'000);
  EXPECT_EQ(r.flow.end_ns, 1'600'000'002'000'000'000);
  RawRecord own = RawRecord();
  own.uptime_start_ms = 1000;
  own.system_init_ms = 1'500'000'000'000;  // the record's own boot time wins
  ResolveTimes(m, &domain, &own);
  EXPECT_EQ(own.flow.start_ns, 1'500'000'001'000'000'000);
}

TEST(DataRecord, AbsoluteTimesWinOverRelativeOnes) {
  RawRecord r;
  r.flow.start_ns = 5;
  r.have = kHaveStart;
  r.delta_start_us = 1'000'000;
  r.delta_end_us = 500'000;
  ResolveTimes({.version = 10, .export_s = 1'700'000'000, .sys_uptime_ms = 0}, nullptr, &r);
  EXPECT_EQ(r.flow.start_ns, 5);
  EXPECT_EQ(r.flow.end_ns, 1'699'999'999'500'000'000);
}

TEST(DataRecord, SamplingPrecedence) {
  DomainState domain;
  RawRecord options;
  options.sampling_size = 2;
  options.sampling_population = 1000;  // 1-in-500, for sampler 4
  options.has_sampler = true;
  options.sampler = 4;
  ApplyOptionsRecord(options, &domain);
  RawRecord domain_default;
  domain_default.sampling = 64;
  ApplyOptionsRecord(domain_default, &domain);
  EXPECT_EQ(domain.samplers.at(4), 500u);
  EXPECT_EQ(domain.default_sampling, 64u);

  RawRecord stated;
  stated.sampling = 10;
  stated.has_sampler = true;
  stated.sampler = 4;
  EXPECT_EQ(ResolveSampling(stated, &domain), 10u);
  RawRecord by_sampler;
  by_sampler.has_sampler = true;
  by_sampler.sampler = 4;
  EXPECT_EQ(ResolveSampling(by_sampler, &domain), 500u);
  RawRecord unknown_sampler;
  unknown_sampler.has_sampler = true;
  unknown_sampler.sampler = 5;
  EXPECT_EQ(ResolveSampling(unknown_sampler, &domain), 64u);
  EXPECT_EQ(ResolveSampling(RawRecord(), nullptr), 1u);
  RawRecord odd;  // population below size: no interval
  odd.sampling_size = 10;
  odd.sampling_population = 5;
  EXPECT_EQ(StatedSampling(odd), 0u);
}

TEST(DataRecord, SamplerTableIsBounded) {
  DomainState domain;
  for (uint64_t id = 0; id < kMaxSamplersPerDomain + 10; ++id) {
    RawRecord o;
    o.sampling = 2;
    o.has_sampler = true;
    o.sampler = id;
    ApplyOptionsRecord(o, &domain);
  }
  EXPECT_EQ(domain.samplers.size(), kMaxSamplersPerDomain);
  RawRecord again;  // a known sampler is still updated
  again.sampling = 7;
  again.has_sampler = true;
  again.sampler = 3;
  ApplyOptionsRecord(again, &domain);
  EXPECT_EQ(domain.samplers.at(3), 7u);
}

}  // namespace
}  // namespace prism::ingest
