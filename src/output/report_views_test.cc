#include "output/report_views.h"

#include <gtest/gtest.h>

#include "output/report_views_test_util.h"

namespace prism::output {
namespace {

using testing::kViewMs;
using testing::ViewsReport;

TEST(StepSegments, PartitionTheStepAndClassifyGaps) {
  Report r = ViewsReport();
  const ReportStep& s = r.timelines[0].steps[0];  // stage 0: sends forward at +100 ms
  std::vector<StepSegment> segs = StepSegments(s);
  ASSERT_FALSE(segs.empty());
  EXPECT_EQ(segs.front().start_ns, s.start_ns);
  EXPECT_EQ(segs.back().end_ns, s.end_ns);
  for (size_t i = 1; i < segs.size(); ++i) {
    EXPECT_EQ(segs[i].start_ns, segs[i - 1].end_ns);
    EXPECT_NE(segs[i].kind, segs[i - 1].kind);
  }
  // compute (gap before its own send), PP forward, bubble (waits for the gradient), PP backward,
  // compute (before the DP phase), DP.
  std::vector<SegmentKind> kinds;
  for (const auto& seg : segs) kinds.push_back(seg.kind);
  EXPECT_EQ(kinds, (std::vector<SegmentKind>{SegmentKind::kCompute, SegmentKind::kPpForward,
                                             SegmentKind::kBubble, SegmentKind::kPpBackward,
                                             SegmentKind::kCompute, SegmentKind::kDp}));
  EXPECT_EQ(segs[1].end_ns - segs[1].start_ns, 10 * kViewMs);
}

TEST(StepSegments, EmptyStepAndOverlappingEvents) {
  ReportStep s;
  s.start_ns = 100;
  s.end_ns = 100;
  EXPECT_TRUE(StepSegments(s).empty());
  s.end_ns = 1000;
  s.pp_events = {{200, 600, IpAddr(), true, true}, {400, 1200, IpAddr(), false, false}};
  auto segs = StepSegments(s);
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[1].kind, SegmentKind::kPpForward);
  EXPECT_EQ(segs[2].kind, SegmentKind::kPpBackward);
  EXPECT_EQ(segs[2].end_ns, 1000);  // clipped to the step
}

TEST(JobStepSeries, GroupsTheGpusOfOneStep) {
  Report r = ViewsReport(8);
  auto series = JobStepSeries(r, r.jobs[0]);
  ASSERT_EQ(series.size(), 8u);
  EXPECT_EQ(series[0].gpus, 4u);
  EXPECT_NEAR(series[0].median_s, 1.0, 1e-9);
  StepTrend t = ComputeStepTrend(series);
  EXPECT_TRUE(t.known);
  EXPECT_NEAR(t.slope_pct_per_min, 0, 1e-6);
}

TEST(SelectTimelineGpus, SamplesOneReplicaPlusFindingGpus) {
  Report r = ViewsReport();
  GpuSelection all = SelectTimelineGpus(r, r.jobs[0], 64);
  EXPECT_FALSE(all.sampled);
  EXPECT_EQ(all.gpus.size(), 4u);
  GpuSelection some = SelectTimelineGpus(r, r.jobs[0], 2);
  EXPECT_TRUE(some.sampled);
  EXPECT_EQ(some.total, 4u);
  // Replica 10.0.0.1 -> 10.0.1.1, the finding's 10.0.1.2 and its replica peer 10.0.0.2.
  ASSERT_EQ(some.gpus.size(), 4u);
  EXPECT_EQ(some.gpus[0].stage, 0);
  EXPECT_EQ(some.gpus.back().stage, 1);
  bool finding = false;
  for (const auto& g : some.gpus) finding |= g.gpu.ToString() == "10.0.1.2" && g.why == "finding";
  EXPECT_TRUE(finding);
}

}  // namespace
}  // namespace prism::output
