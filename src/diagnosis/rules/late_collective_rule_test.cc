#include "diagnosis/rules/late_collective_rule.h"

#include <gtest/gtest.h>

#include <random>

#include "analysis/endpoint_context.h"
#include "flow/flow_table.h"

namespace prism::diagnosis {
namespace {

constexpr int64_t kMs = 1'000'000;

// A DP-only job of four GPUs (10.0.0.1-4) with 350 ms steps; each GPU's first DP send comes a few
// ms (jitter) after the step's backward ends, and `late_ms` later for the GPUs in `late` during
// steps [first, last].
struct DpOnlyJob {
  flow::FlowTable table;
  PointTable points;
  analysis::EndpointContext ctx;
  analysis::AnalysisResults results;
  DiagnosisOptions options;

  DpOnlyJob(const std::vector<int>& late, double late_ms, size_t first, size_t last) {
    for (uint32_t g = 1; g <= 4; ++g) {
      FlowRecord r;
      r.src = IpAddr::FromV4(0x0a000000 + g);
      r.dst = IpAddr::FromV4(0x0a000000 + g % 4 + 1);
      r.end_ns = r.start_ns = 1;
      r.bytes = 1 << 20;
      table.OnRecord(r);
    }
    ctx = analysis::BuildEndpointContext(table.endpoints(), nullptr);
    analysis::Job job;
    job.id = "job0";
    job.layout.pp = 1;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> jitter(0, 4);
    for (EndpointId e = 0; e < 4; ++e) {
      job.gpus.push_back(e);
      analysis::Timeline tl;
      tl.gpu = e;
      tl.job = 0;
      tl.stage = 0;
      results.timelines.push_back(tl);
    }
    results.jobs.push_back(job);
    int64_t t = 0;
    for (size_t k = 0; k < 40; ++k) {
      const bool slow = k >= first && k <= last;
      for (EndpointId e = 0; e < 4; ++e) {
        const int ip_last = int(table.endpoints().Addr(e).ToString().back() - '0');
        const bool is_late = slow && std::find(late.begin(), late.end(), ip_last) != late.end();
        analysis::TimelineStep s;
        s.start_ns = t;
        s.end_ns = t + (slow ? int64_t((350 + late_ms) * kMs) : 350 * kMs);
        s.dp_first_send_ns =
            t + int64_t((330 + jitter(rng) + (is_late ? late_ms : 0)) * kMs);
        results.timelines[e].steps.push_back(s);
      }
      t += slow ? int64_t((350 + late_ms) * kMs) : 350 * kMs;
    }
  }
  std::vector<Finding> Run() const {
    return FindLateCollectiveGpus({table, points, ctx, results, options});
  }
};

TEST(LateCollectiveRule, NamesTheGpuThatJoinsTheCollectiveLate) {
  const DpOnlyJob job({3}, 150, 10, 30);
  const auto findings = job.Run();
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, diagnosis::FindingKind::kStragglerGpu);
  EXPECT_EQ(f.cause, Cause::kGpu);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(job.table.endpoints().Addr(f.gpus[0]).ToString(), "10.0.0.3");
  EXPECT_NEAR(f.value, 150, 5);
  EXPECT_EQ(f.units, 21);
  EXPECT_EQ(f.severity, Severity::kCritical);
}

TEST(LateCollectiveRule, PairwisePartnersLateTogetherAreOneFinding) {
  const auto findings = DpOnlyJob({3, 4}, 150, 10, 30).Run();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].gpus.size(), 2u);
}

TEST(LateCollectiveRule, JitterAndAShortBlipAreNotStragglers) {
  EXPECT_TRUE(DpOnlyJob({}, 0, 0, 0).Run().empty());
  // One step late: below the persistence a warning needs, and not reported at all.
  EXPECT_TRUE(DpOnlyJob({2}, 150, 20, 20).Run().empty());
  // A mild delay under min_gpu_effect of the step (10%: 35 ms).
  EXPECT_TRUE(DpOnlyJob({2}, 20, 10, 30).Run().empty());
}

TEST(LateCollectiveRule, PipelineJobsAreLeftToTheStragglerRule) {
  DpOnlyJob job({3}, 150, 10, 30);
  job.results.jobs[0].layout.pp = 2;
  EXPECT_TRUE(job.Run().empty());
}

}  // namespace
}  // namespace prism::diagnosis
