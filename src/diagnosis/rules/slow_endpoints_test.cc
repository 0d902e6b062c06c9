#include "diagnosis/rules/slow_endpoints.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "analysis/endpoint_context.h"
#include "analysis/jobs/job_recognition.h"
#include "diagnosis/rules/bandwidth_cells.h"
#include "flow/flow_table.h"

namespace prism::diagnosis {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kBinNs = 1000 * kMs;
constexpr int64_t kBins = 8;

// One job of four GPUs 10.0.0.1-4 laid out as DP2 x PP2: DP pairs 1-2 and 3-4, PP pairs 1-3 and
// 2-4, every pair sending both ways. Per bin and direction, five 1 MiB transfers at 1 MiB/ms,
// or at `slow_factor` of that pace for the directions `slow` names during bins [3, 5].
struct FourGpuJob {
  flow::FlowTable table;
  PointTable points;
  analysis::EndpointContext ctx;
  analysis::AnalysisResults results;
  DiagnosisOptions options;

  // `flowlets`: each transfer split into that many back-to-back records (same pace);
  // `packets`: plus one single-packet 64 KiB record per transfer (start == end);
  // `sampled`: directions seen 1 in `rate` packets during bins [3, 5] (records of 1/rate the
  // bytes, carrying rate: a source that samples, e.g. an sFlow agent taking over from a flow
  // exporter), the columns released after transfer building as the pipeline does.
  FourGpuJob(const std::set<std::pair<int, int>>& slow, double slow_factor, int flowlets = 1,
             bool packets = false, const std::set<std::pair<int, int>>& sampled = {},
             uint32_t rate = 1, bool bins_backwards = false) {
    const std::pair<int, int> directions[] = {{1, 2}, {2, 1}, {3, 4}, {4, 3},
                                              {1, 3}, {3, 1}, {2, 4}, {4, 2}};
    for (int64_t i_bin = 0; i_bin < kBins; ++i_bin) {
      const int64_t bin = bins_backwards ? kBins - 1 - i_bin : i_bin;
      for (int k = 0; k < 5; ++k) {
        for (auto [a, b] : directions) {
          const bool is_slow = bin >= 3 && bin <= 5 && slow.count({a, b}) > 0;
          const int64_t duration_ns = int64_t(double(kMs) / (is_slow ? slow_factor : 1.0));
          const int64_t start = bin * kBinNs + k * 100 * kMs + (a * 4 + b) * 2 * kMs;
          for (int i = 0; i < flowlets; ++i) {
            FlowRecord r;
            r.src = IpAddr::FromV4(0x0a000000 + uint32_t(a));
            r.dst = IpAddr::FromV4(0x0a000000 + uint32_t(b));
            r.start_ns = start + i * duration_ns / flowlets;
            r.end_ns = start + (i + 1) * duration_ns / flowlets;
            r.bytes = (1 << 20) / uint64_t(flowlets);
            if (bin >= 3 && bin <= 5 && sampled.count({a, b}) > 0) {
              r.bytes /= rate;
              r.sampling_rate = rate;
            }
            table.OnRecord(r);
          }
          if (packets) {
            FlowRecord p;
            p.src = IpAddr::FromV4(0x0a000000 + uint32_t(a));
            p.dst = IpAddr::FromV4(0x0a000000 + uint32_t(b));
            p.start_ns = p.end_ns = start + duration_ns;
            p.bytes = 65536;
            table.OnRecord(p);
          }
        }
      }
    }
    if (!sampled.empty()) table.ReleaseTransferColumns();
    ctx = analysis::BuildEndpointContext(table.endpoints(), nullptr);
    results.job_of.assign(table.endpoints().size(), 0);
    results.jobs.emplace_back();
  }

  // (last octet of the endpoint, bin) of every slow endpoint bin.
  std::set<std::pair<int, int64_t>> Run() const {
    std::set<std::pair<int, int64_t>> out;
    for (const SlowEndpointBin& s :
         FindSlowEndpoints({table, points, ctx, results, options}, 0, kBinNs, kBins)) {
      out.insert({table.endpoints().Addr(s.endpoint).ToString().back() - '0', s.bin});
      EXPECT_LT(s.pace_ratio, 0.5);
    }
    return out;
  }
};

const std::set<std::pair<int, int64_t>> kGpu2Slow = {{2, 3}, {2, 4}, {2, 5}};

TEST(SlowEndpoints, RowsOutOfStartOrderGiveTheSameAnswer) {
  // The pairs' sums are kept bin by bin, each bin's grown to the pairs seen so far when a record
  // of it comes: rows from the last bin back to the first (every pair first seen in the last
  // bin, each earlier bin's sums grown after) must give the answer rows in start order give.
  EXPECT_EQ(FourGpuJob({{2, 1}, {2, 4}}, 0.2, 1, false, {}, 1, /*bins_backwards=*/true).Run(),
            kGpu2Slow);
  EXPECT_TRUE(FourGpuJob({{1, 2}, {2, 1}}, 0.2, 1, false, {}, 1, true).Run().empty());
}

TEST(SlowEndpoints, NamesTheGpuWhoseSendsAllSlowed) {
  // A link limiting what GPU 2 sends: its DP and its PP sends crawl, everything else runs.
  EXPECT_EQ(FourGpuJob({{2, 1}, {2, 4}}, 0.2).Run(), kGpu2Slow);
}

TEST(SlowEndpoints, NamesTheGpuWhenAcksSlowItsReceivesToo) {
  // Over TCP the acknowledgements queue behind the limited sends: GPU 1's sends to GPU 2 slow as
  // well, so half of GPU 1's pairs are slow — GPU 1 is not named, GPU 2 is.
  EXPECT_EQ(FourGpuJob({{2, 1}, {2, 4}, {1, 2}}, 0.2).Run(), kGpu2Slow);
}

TEST(SlowEndpoints, OnePairSlowNamesNoGpu) {
  // Both directions of one DP pair: either end's link, or the path between them; no GPU alone.
  EXPECT_TRUE(FourGpuJob({{1, 2}, {2, 1}}, 0.2).Run().empty());
}

TEST(SlowEndpoints, AJobSlowEverywhereNamesNoGpu) {
  // Every pair slow (the job's collective waits, or a shared element is bad): the far ends'
  // other pairs are slow too, so no one link is to blame.
  EXPECT_TRUE(FourGpuJob({{1, 2}, {2, 1}, {3, 4}, {4, 3}, {1, 3}, {3, 1}, {2, 4}, {4, 2}}, 0.2)
                  .Run()
                  .empty());
}

TEST(SlowEndpoints, AMildSlowdownIsNoDegradation) {
  // Below the minimum drop (half the pace): contention, not a degraded link.
  EXPECT_TRUE(FourGpuJob({{2, 1}, {2, 4}}, 0.7).Run().empty());
}

TEST(SlowEndpoints, RecordGranularityDoesNotChangeTheAnswer) {
  // The pace is bytes over busy time: flowlets of one transfer add up to the transfer, and
  // single-packet records (no duration, no pace) are left out.
  EXPECT_EQ(FourGpuJob({{2, 1}, {2, 4}}, 0.2, /*flowlets=*/4).Run(), kGpu2Slow);
  EXPECT_EQ(FourGpuJob({{2, 1}, {2, 4}}, 0.2, /*flowlets=*/1, /*packets=*/true).Run(), kGpu2Slow);
}

TEST(SlowEndpoints, SampledRecordsPaceAtTheirBytesTimesN) {
  // GPU 2's sends seen 1 in 100 in bins 3-5 (records of 1% of the bytes, sampling rate 100) at
  // the same true pace as before: no GPU is slow. Counted at their sampled bytes they crawled at
  // 1% of their usual pace and GPU 2 was named.
  const std::set<std::pair<int, int>> gpu2_sends = {{2, 1}, {2, 4}};
  EXPECT_TRUE(FourGpuJob({}, 1.0, 1, false, gpu2_sends, 100).Run().empty());
  // Every record sampled in bins 3-5: a real slowdown of GPU 2's sends is still found (counted
  // at their sampled bytes every pair crawled: no one GPU to blame).
  const std::set<std::pair<int, int>> all = {{1, 2}, {2, 1}, {3, 4}, {4, 3},
                                             {1, 3}, {3, 1}, {2, 4}, {4, 2}};
  EXPECT_EQ(FourGpuJob(gpu2_sends, 0.2, 1, false, all, 100).Run(), kGpu2Slow);
}

// The record classes' first pass sums the paces in runs of rows (RecordClasses::Measure): a pair
// is known by the caller's number when the caller has one for it, else by its key, and a later
// run's sums are appended to the earlier's. Wherever the rows are cut, the answer, to the slow
// rows, is that of one pass.
TEST(SlowEndpoints, SumsOfRunsAppendedAnswerAsOnePass) {
  const FourGpuJob job({{2, 1}, {2, 4}}, 0.2, /*flowlets=*/2);
  const RuleContext rc{job.table, job.points, job.ctx, job.results, job.options};
  const std::vector<SlowEndpointBin> one_pass = FindSlowEndpoints(rc, 0, kBinNs, kBins);
  ASSERT_FALSE(one_pass.empty());
  // The caller numbers the pairs of GPU 1 (in an order of its own: last row first); the others
  // are left to the sums' own map.
  const auto& f = job.table;
  const EndpointId gpu1 = f.src()[0];
  analysis::PairKeyMap numbers;
  for (size_t r = f.size(); r-- > 0;)
    if (f.src()[r] == gpu1 || f.dst()[r] == gpu1)
      numbers.FindOrInsert(analysis::PairKey(f.src()[r], f.dst()[r]));
  ASSERT_EQ(numbers.size(), 2u);
  for (const size_t cut : {size_t{0}, size_t{1}, f.size() / 3, f.size() / 2, f.size()}) {
    SCOPED_TRACE(cut);
    PairPaceSums first(0, kBinNs, kBins);
    first.NumberPairs(numbers.size());
    PairPaceSums later = first.EmptyCopy();
    for (size_t r = 0; r < f.size(); ++r) {
      if (PacedJob(rc, r) < 0) continue;
      const uint32_t number = numbers.Find(analysis::PairKey(f.src()[r], f.dst()[r]));
      (r < cut ? first : later).Add(f, r, number);
    }
    first.Append(std::move(later));
    EXPECT_EQ(FindSlowEndpoints(rc, std::move(first)), one_pass);
  }
}

}  // namespace
}  // namespace prism::diagnosis
