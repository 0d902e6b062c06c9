#include "counters/port_counters.h"

#include <cstddef>
#include <numeric>
#include <random>
#include <span>
#include <string>

#include <gtest/gtest.h>

#include "counters/resample.h"
#include "io/input_kind.h"

namespace prism::counters {
namespace {

std::span<const std::byte> Bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

TEST(PortCountersCsv, ReadsDeltasInAnyOrder) {
  Stats stats;
  auto d = ReadCountersCsvBuffer(
      "ts_ms,switch,port,in_pkts,in_bytes,out_pkts,out_bytes\n"
      "2000,leaf1,p2,0,5,0,6\n"
      "1000,leaf1,p1,0,1,0,2\n"
      "2000,leaf1,p1,0,3,0,4\n"
      "1000,leaf1,p2,0,7,0,8\n"
      "oops,leaf1,p2,0,7,0,8\n",
      "t.csv", CounterKind::kDelta, &stats);
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(d->ports.size(), 2u);
  EXPECT_EQ(d->ports[0].port, "p1");
  EXPECT_EQ(d->ports[0].ts_ms, (std::vector<int64_t>{1000, 2000}));
  EXPECT_EQ(d->ports[1].in_bytes, (std::vector<uint64_t>{7, 5}));
  EXPECT_EQ(d->rows, 4u);
  EXPECT_EQ(stats.Get(Stat::counters_bad_row), 1u);
  EXPECT_EQ(d->first_ms, 1000);
  EXPECT_EQ(d->last_ms, 2000);
}

TEST(PortCountersCsv, BadHeaderIsAnError) {
  auto d = ReadCountersCsvBuffer("a,b,c\n1,2,3\n", "t.csv", CounterKind::kAuto, nullptr);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().code, ErrorCode::kDataLoss);
}

TEST(PortCountersCsv, CumulativeDetectedWithWrapAndReset) {
  std::string csv = "ts_ms,switch,port,in_bytes,out_bytes\n";
  uint64_t in = (uint64_t{1} << 32) - 5000, out = 1'000'000;
  for (int i = 0; i < 40; ++i) {
    csv += std::to_string(1000 * i) + ",s,p," + std::to_string(in % (uint64_t{1} << 32)) + "," +
           std::to_string(out) + "\n";
    in += 1000;
    out = i == 10 ? 500 : out + 2000;  // reset after poll 10
  }
  Stats stats;
  auto d = ReadCountersCsvBuffer(csv, "c.csv", CounterKind::kAuto, &stats);
  ASSERT_TRUE(d.has_value());
  const PortSeries& p = d->ports[0];
  for (size_t i = 1; i < p.in_bytes.size(); ++i) EXPECT_EQ(p.in_bytes[i], 1000u) << i;
  EXPECT_EQ(stats.Get(Stat::counters_wrap), 1u);
  EXPECT_EQ(stats.Get(Stat::counters_reset), 1u);
  EXPECT_EQ(p.out_bytes[11], 500u);  // after the reset: the new value
  EXPECT_EQ(p.out_bytes[12], 2000u);
}

TEST(PortTopologyCsv, Reads) {
  Stats stats;
  auto t = ReadPortTopologyCsvBuffer(
      "switch,port,server,nic_ip,nic\nleaf1,p1,host-a,10.0.0.1,ens1\nleaf1,p1,host-b,,\n"
      "leaf2,p1,host-a,10.0.0.2,ens2\n",
      "p.csv", &stats);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->size(), 2u);
  EXPECT_EQ(t->at({"leaf1", "p1"}).server, "host-a");
  EXPECT_EQ(stats.Get(Stat::topology_duplicate_ip), 1u);
}

TEST(InputKind, DetectsCountersAndPortTopology) {
  EXPECT_EQ(io::GuessInputKind(Bytes("ts_ms,switch,port,in_pkts,in_bytes,out_pkts,out_bytes\n")),
            io::InputKind::kPortCountersCsv);
  EXPECT_EQ(io::GuessInputKind(Bytes("switch,port,server,nic_ip,nic\n")),
            io::InputKind::kPortTopologyCsv);
}

// Irregular polls, stale zeros (refresh 1 s, polls ~0.57 s), gaps: every byte after the first
// poll lands on the grid.
TEST(Resample, ConservesBytesAndFlattensStaleZeros) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> extra(1 / 0.1);
  PortSeries p;
  const double rate = 1e6;  // bytes per ms, constant
  double t = 0, last_refresh_value = 0;
  uint64_t prev = 0;
  for (int i = 0; t < 600'000; ++i) {
    t += 470 + extra(rng) * 1000 + (i == 300 ? 8000 : 0);  // one 8 s gap
    double refreshed = std::floor(t / 1000) * 1000 * rate;  // refreshed once a second
    last_refresh_value = refreshed;
    uint64_t v = static_cast<uint64_t>(last_refresh_value);
    p.ts_ms.push_back(static_cast<int64_t>(t));
    p.in_bytes.push_back(v - prev);
    p.out_bytes.push_back(0);
    prev = v;
  }
  Grid g;
  g.start_ms = 0;
  g.bin_s = 0.25;
  g.bins = static_cast<size_t>(t / 250) + 2;
  std::vector<double> bytes(g.bins, 0);
  std::vector<uint16_t> covered(g.bins, 0);
  SpreadOptions o;
  o.refresh_s = 1.0;
  Stats stats;
  uint64_t spread = SpreadPort(p, g, o, bytes.data(), covered.data(), &stats);
  const uint64_t expect = std::accumulate(p.in_bytes.begin() + 1, p.in_bytes.end(), uint64_t{0});
  EXPECT_EQ(spread, expect);
  EXPECT_NEAR(std::accumulate(bytes.begin(), bytes.end(), 0.0), static_cast<double>(expect), 1.0);
  EXPECT_GT(stats.Get(Stat::counters_stale_zero), 100u);
  EXPECT_EQ(stats.Get(Stat::counters_gap), 1u);
  // Five-second averages stay within 15% of the true rate despite stale zeros and jitter.
  for (size_t s = 4; s < 50; ++s) {
    double sum = 0;
    for (size_t k = 20 * s; k < 20 * s + 20; ++k) sum += bytes[k];
    EXPECT_NEAR(sum / 5000 / rate, 1.0, 0.15) << s;
  }
}

}  // namespace
}  // namespace prism::counters
