#include "analysis/classify/transfers.h"

#include <gtest/gtest.h>

#include <random>

#include <fmt/format.h>

#include "testing/flow_builder.h"

namespace prism::analysis {
namespace {

using prism::testing::FlowBuilder;

bool SameTransfers(const PairsTransfers& x, const PairsTransfers& y) {
  if (x.pairs.size() != y.pairs.size()) return false;
  for (size_t i = 0; i < x.pairs.size(); ++i) {
    if (x.pairs[i].a != y.pairs[i].a || x.pairs[i].b != y.pairs[i].b) return false;
    const PairTransfers &p = x.transfers[i], &q = y.transfers[i];
    if (p.data_records != q.data_records || p.control_records != q.control_records ||
        p.transfers.size() != q.transfers.size())
      return false;
    for (size_t k = 0; k < p.transfers.size(); ++k) {
      const Transfer &s = p.transfers[k], &t = q.transfers[k];
      if (s.start_ns != t.start_ns || s.end_ns != t.end_ns || s.bytes != t.bytes ||
          s.records != t.records || s.from_a != t.from_a)
        return false;
    }
  }
  return true;
}

// 40 GPUs all talking to all (780 pairs), each pair with messages on two QPs both ways, a small
// control write, and a flow an exporter cut in two on one QP.
flow::FlowTable AllToAll(int steps = 3) {
  flow::FlowTable t;
  for (int step = 0; step < steps; ++step) {
    for (int i = 0; i < 40; ++i) {
      for (int j = 0; j < 40; ++j) {
        if (i == j) continue;
        const std::string a = fmt::format("10.0.{}.{}", i / 8, i % 8 + 1);
        const std::string b = fmt::format("10.0.{}.{}", j / 8, j % 8 + 1);
        const int64_t t0 = step * 1'000'000'000LL + (i * 40 + j) * 1'000;
        FlowBuilder(a, b).At(t0, 50'000).Bytes(1 << 20).Qp(7).Into(&t);
        FlowBuilder(a, b).At(t0 + 300, 50'000).Bytes(1 << 20).Qp(8).Into(&t);
        FlowBuilder(a, b).At(t0 - 5'000).Bytes(64).Qp(9).Into(&t);
        // Cut by an active timeout: the second half starts as the first ends, on the same QP,
        // after the grouping window.
        FlowBuilder(a, b).At(t0 + 20'000'000, 10'000'000).Bytes(8 << 20).Qp(7).Into(&t);
        FlowBuilder(a, b).At(t0 + 30'000'000, 5'000'000).Bytes(4 << 20).Qp(7).Into(&t);
      }
    }
  }
  t.SortByStart();
  return t;
}

TEST(BuildAllTransfers, ListingRowsPerPairGivesTheSameTransfersAsOnePass) {
  const flow::FlowTable t = AllToAll();
  const std::vector<int> job_of(t.endpoints().size(), 0);
  TransferOptions one_pass;
  TransferOptions listed;
  listed.single_pass_max_pairs = 0;
  const PairsTransfers x = BuildAllTransfers(t, job_of, one_pass);
  const PairsTransfers y = BuildAllTransfers(t, job_of, listed, /*threads=*/2);
  ASSERT_EQ(x.pairs.size(), 40u * 39 / 2);
  EXPECT_TRUE(SameTransfers(x, y));
  // Listed per pair, each pair's transfers are built in a buffer reused from pair to pair and
  // kept at their exact size: no growth slack held for millions of pairs.
  for (const PairTransfers& p : y.transfers) EXPECT_EQ(p.transfers.capacity(), p.transfers.size());
  // Per pair and step: one transfer each way (the two QPs grouped) and the cut flow joined
  // again into one; the control writes counted apart.
  EXPECT_EQ(x.transfers[0].transfers.size(), 3u * 2 * 2);
  EXPECT_EQ(x.transfers[0].control_records, 3u * 2);
  EXPECT_EQ(x.transfers[0].transfers[0].records, 2u);
}

// From 65,536 rows on, the pairs are found on the threads, each over its own run of rows, and
// numbered again in the order of their first row: the same transfers by either route.
TEST(BuildAllTransfers, RowsSplitOverThreadsGiveTheSameTransfers) {
  const flow::FlowTable t = AllToAll(/*steps=*/28);
  ASSERT_GE(t.size(), 3u * 65536);
  const std::vector<int> job_of(t.endpoints().size(), 0);
  TransferOptions one_pass;
  TransferOptions listed;
  listed.single_pass_max_pairs = 0;
  const PairsTransfers x = BuildAllTransfers(t, job_of, one_pass);
  ASSERT_EQ(x.pairs.size(), 40u * 39 / 2);
  EXPECT_EQ(x.transfers[0].transfers.size(), 28u * 2 * 2);
  for (int threads : {2, 3, 4}) {
    SCOPED_TRACE(threads);
    EXPECT_TRUE(SameTransfers(x, BuildAllTransfers(t, job_of, one_pass, threads)));
    EXPECT_TRUE(SameTransfers(x, BuildAllTransfers(t, job_of, listed, threads)));
  }
}

// A pair's rows fed in two runs, the second builder appended to the first: the transfers of one
// builder fed all the rows, wherever the cut falls (inside bursts, between them, with a long
// record of one run still open over the next run's first ones, both directions interleaved).
TEST(TransferBuilder, AppendingTheNextRunsBuilderGivesTheOnePassTransfers) {
  std::mt19937 rng(3);
  flow::FlowTable t;
  int64_t at = 0;
  for (int i = 0; i < 400; ++i) {
    // Gaps mostly inside a burst, some just past group_ns, some idle; now and then a long record.
    const int kind = int(rng() % 10);
    at += kind < 6 ? int64_t(rng() % 300'000) : kind < 8 ? 1'000'000 + int64_t(rng() % 50'000)
                                                          : 5'000'000 + int64_t(rng() % 5'000'000);
    const int64_t duration = rng() % 8 == 0 ? 4'000'000 : 20'000 + int64_t(rng() % 200'000);
    const bool forward = rng() % 3 != 0;
    FlowBuilder(forward ? "10.0.0.1" : "10.0.0.2", forward ? "10.0.0.2" : "10.0.0.1")
        .At(at, duration)
        .Bytes(rng() % 6 == 0 ? 64 : 1 << 20)  // control writes too
        .Into(&t);
  }
  t.SortByStart();
  const TransferOptions options;
  const EndpointId a = t.endpoints().Find(*IpAddr::Parse("10.0.0.1"));
  auto feed = [&](TransferBuilder* b, size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) b->Add(t, flow::RowId(r), t.src()[r] == a, options);
  };
  TransferBuilder whole;
  feed(&whole, 0, t.size());
  PairsTransfers want;
  want.pairs.push_back({});
  want.transfers.push_back(whole.result());
  ASSERT_GT(want.transfers[0].transfers.size(), 50u);
  ASSERT_LT(want.transfers[0].transfers.size(), 300u);  // bursts of several records
  size_t joined_across = 0;
  for (size_t cut = 0; cut <= t.size(); ++cut) {
    SCOPED_TRACE(cut);
    TransferBuilder first, second;
    feed(&first, 0, cut);
    feed(&second, cut, t.size());
    const size_t apart = first.result().transfers.size() + second.result().transfers.size();
    first.Append(std::move(second), options);
    joined_across += apart - first.result().transfers.size();
    PairsTransfers got;
    got.pairs.push_back({});
    got.transfers.push_back(first.result());
    ASSERT_TRUE(SameTransfers(want, got));
    EXPECT_EQ(got.transfers[0].transfers.capacity(), got.transfers[0].transfers.size());
    // And the appended builder goes on as the whole one would.
    TransferBuilder third;
    first.Append(std::move(third), options);
    ASSERT_TRUE(SameTransfers(want, PairsTransfers{{{}}, {first.result()}}));
  }
  EXPECT_GT(joined_across, 100u);  // cuts inside transfers were met
}

TEST(BuildAllTransfers, PairsOfOtherJobsAndSelfTrafficAreLeftOut) {
  flow::FlowTable t;
  FlowBuilder("10.0.0.1", "10.0.0.2").At(0).Bytes(1 << 20).Into(&t);
  FlowBuilder("10.0.0.1", "10.0.0.3").At(10).Bytes(1 << 20).Into(&t);
  FlowBuilder("10.0.0.1", "10.0.0.1").At(20).Bytes(1 << 20).Into(&t);
  t.SortByStart();
  std::vector<int> job_of(t.endpoints().size(), 0);
  job_of[t.endpoints().Find(*IpAddr::Parse("10.0.0.3"))] = 1;
  const PairsTransfers x = BuildAllTransfers(t, job_of, {});
  ASSERT_EQ(x.pairs.size(), 1u);
  EXPECT_EQ(t.endpoints().Addr(x.pairs[0].b), *IpAddr::Parse("10.0.0.2"));
}

}  // namespace
}  // namespace prism::analysis
