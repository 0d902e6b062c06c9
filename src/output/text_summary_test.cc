#include "output/text_summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "output/report.h"
#include "output/report_test_util.h"

namespace prism::output {
namespace {

using diagnosis::Severity;
using testing::TestWindow;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

Report SampleReport() {
  TestWindow w(kT0, kT0 + 60 * kSec,
               {"10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2", "10.0.2.1", "10.0.2.2"});
  int j = w.AddJob({"10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2"}, 2, 2, 1,
                   {{"10.0.0.1", "10.0.0.2"}, {"10.0.1.1", "10.0.1.2"}});
  w.AddTimeline("10.0.0.1", j, 0, kT0, {2.0, 2.0, 2.0});
  // Ranked: critical first, then warnings by effect: x3 (0.5 vs 1.5) before x1.2.
  w.AddFinding("slow_step", Severity::kWarning, j, {}, kT0 + 1 * kSec, kT0 + 3 * kSec, 2.4, 2.0)
      .summary = "mild";
  w.AddFinding("degraded_switch", Severity::kWarning, -1, {}, kT0 + 2 * kSec, kT0 + 4 * kSec, 0.5,
               1.5)
      .summary = "big drop";
  w.AddFinding("straggler_gpu", Severity::kCritical, j, {"10.0.1.1"}, kT0 + 12 * kSec,
               kT0 + 30 * kSec + kSec / 2, 2.9, 2.0)
      .summary = "critical one";
  w.findings[1].switches = {"spine0"};
  w.findings[1].metric = "relative_bandwidth";

  TestWindow empty(kT0 + 60 * kSec, kT0 + 120 * kSec, {"10.0.9.1", "10.0.9.2"});
  ReportBuilder b(60);
  b.AddWindow(w.Input());
  b.AddWindow(empty.Input());
  b.AddSource("flows.csv", "csv", 1234567);
  Stats stats;
  stats.Add(Stat::records_read, 1234567);
  stats.Add(Stat::csv_bad_row, 3);
  stats.Add(Stat::records_non_gpu, 7);
  b.SetInputStats(stats);
  return b.Build();
}

TEST(TextSummary, PlainTextHasNoEscapeCodes) {
  std::string text = FormatSummary(SampleReport(), false);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text, FormatSummary(SampleReport(), false));  // stable
  std::string colored = FormatSummary(SampleReport(), true);
  EXPECT_THAT(colored, HasSubstr("\x1b[1;31m"));  // critical in bold red
  EXPECT_THAT(colored, HasSubstr("\x1b[0m"));
}

TEST(TextSummary, JobsWithLayoutStageOrderAndStepTime) {
  std::string text = FormatSummary(SampleReport(), false);
  EXPECT_THAT(text, HasSubstr("2 windows of 60s; records from +0.0s to +60.0s"));
  EXPECT_THAT(text, HasSubstr("Jobs: 1"));
  EXPECT_THAT(text, HasSubstr("job0  4 GPUs on 2 hosts  DP2×PP2×TP1, 4 micro-batches"));
  EXPECT_THAT(text, HasSubstr("stage0: h0 → stage1: h1"));
  EXPECT_THAT(text, HasSubstr("step time 2.000s median, 2.000s p99 over 3 steps"));
  EXPECT_THAT(text, HasSubstr("warning: window +60.0s to +120.0s (1 records): no job recognised"));
}

TEST(TextSummary, FindingsRankedBySeverityThenEffectWithEvidence) {
  std::string text = FormatSummary(SampleReport(), false);
  size_t critical = text.find("critical one");
  size_t big = text.find("big drop");
  size_t mild = text.find("mild");
  ASSERT_NE(critical, std::string::npos);
  ASSERT_NE(big, std::string::npos);
  ASSERT_NE(mild, std::string::npos);
  EXPECT_LT(critical, big);
  EXPECT_LT(big, mild);
  EXPECT_THAT(text, HasSubstr("CRITICAL  straggler_gpu  job0  cause: gpu"));
  EXPECT_THAT(text, HasSubstr("step_duration_s 2.9 vs baseline 2 (+45%)"));
  EXPECT_THAT(text, HasSubstr("+12.0s to +30.5s"));
  EXPECT_THAT(text, HasSubstr("GPUs: 10.0.1.1"));
  EXPECT_THAT(text, HasSubstr("relative_bandwidth 0.5 vs baseline 1.5 (-67%)"));
  EXPECT_THAT(text, HasSubstr("switches: spine0"));
  EXPECT_THAT(text, HasSubstr("degraded_switch  (no job)"));
}

TEST(TextSummary, InputCountersReadSkippedAndWhy) {
  std::string text = FormatSummary(SampleReport(), false);
  EXPECT_THAT(text, HasSubstr("1,234,567 records read from flows.csv (csv, 1,234,567)"));
  EXPECT_THAT(text, HasSubstr("3 skipped as bad:"));
  EXPECT_THAT(text, HasSubstr("csv_bad_row 3: CSV rows skipped"));
  EXPECT_THAT(text, HasSubstr("note: records_non_gpu 7:"));
  EXPECT_THAT(text, Not(HasSubstr("csv_bad_time")));
}

TEST(TextSummary, BigJobsAreAbbreviated) {
  // 10 stages of 6 hosts each (one GPU per host): 3 stages, an ellipsis, the last 2.
  std::vector<std::string> gpus;
  std::vector<std::vector<std::string>> stages(10);
  for (int s = 0; s < 10; ++s) {
    for (int h = 0; h < 6; ++h) {
      std::string ip = fmt::format("10.0.{}.1", s * 6 + h);
      gpus.push_back(ip);
      stages[s].push_back(ip);
    }
  }
  TestWindow w(kT0, kT0 + 60 * kSec, gpus);
  w.AddJob(gpus, 6, 10, 1, stages);
  ReportBuilder b(60);
  b.AddWindow(w.Input());
  std::string text = FormatSummary(b.Build(), false);
  EXPECT_THAT(text, HasSubstr("stage0: h0,h1,h2,…(+3) → stage1: h10,h11,h6,…(+3)"));
  EXPECT_THAT(text, HasSubstr("→ …(5 stages)… → stage8:"));
  EXPECT_THAT(text, Not(HasSubstr("stage3:")));
  EXPECT_THAT(text, HasSubstr("stage9: h54,h55,h56,…(+3)"));
}

TEST(TextSummary, ListsAtMostTwentyFindings) {
  TestWindow w(kT0, kT0 + 60 * kSec, {"10.0.0.1", "10.0.0.2"});
  for (int i = 0; i < 25; ++i) {
    w.AddFinding("slow_step", Severity::kWarning, -1, {"10.0.0.1", "10.0.0.1"}, kT0 + i * kSec,
                 kT0 + (i + 1) * kSec, 1.0 + i, 1.0);
  }
  ReportBuilder b(60);
  b.AddWindow(w.Input());
  Report report = b.Build();
  EXPECT_EQ(report.findings.size(), 25u);
  EXPECT_EQ(report.findings[0].gpus.size(), 1u);  // duplicates from a rule collapse
  std::string text = FormatSummary(report, false);
  EXPECT_THAT(text, HasSubstr("Findings: 25"));
  EXPECT_THAT(text, HasSubstr("… and 5 more, less severe"));
  EXPECT_THAT(text, HasSubstr("+24.0s to +25.0s"));    // largest effect listed
  EXPECT_THAT(text, Not(HasSubstr("+0.0s to +1.0s")));  // smallest effect cut
}

TEST(FindingEffect, SymmetricRatio) {
  ReportFinding f;
  f.value = 3;
  f.baseline = 2;
  EXPECT_DOUBLE_EQ(FindingEffect(f), 1.5);
  f.value = 2;
  f.baseline = 3;
  EXPECT_DOUBLE_EQ(FindingEffect(f), 1.5);
  f.baseline = 0;
  EXPECT_DOUBLE_EQ(FindingEffect(f), 1);
}

}  // namespace
}  // namespace prism::output

namespace prism::output {
namespace {

TEST(TextSummary, StepTimeTrendWithSparkline) {
  testing::TestWindow w(1'700'000'000'000'000'000, 1'700'000'060'000'000'000,
                        {"10.0.0.1", "10.0.0.2"});
  int j = w.AddJob({"10.0.0.1", "10.0.0.2"}, 2, 1, 1, {{"10.0.0.1", "10.0.0.2"}});
  // Steps slowing from 1.0 s to 1.9 s: a positive trend, lowest and highest shown.
  w.AddTimeline("10.0.0.1", j, 0, w.start_ns, {1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9});
  ReportBuilder b(60);
  b.AddWindow(w.Input());
  std::string text = FormatSummary(b.Build(), false);
  EXPECT_THAT(text, ::testing::HasSubstr("trend +"));
  EXPECT_THAT(text, ::testing::HasSubstr("per step 1.000s ▁"));
  EXPECT_THAT(text, ::testing::HasSubstr("█ 1.900s"));
}

}  // namespace
}  // namespace prism::output
