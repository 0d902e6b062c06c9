#include "output/html_report.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "output/report_views_test_util.h"

namespace prism::output {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(HtmlReport, SelfContainedPageWithItsData) {
  Report r = testing::ViewsReport();
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlReport(r, &out).has_value());
  const std::string page = out.str();
  EXPECT_THAT(page, HasSubstr("<script type=\"application/json\" id=\"prism-data\">"));
  EXPECT_THAT(page, HasSubstr("uPlot"));
  EXPECT_THAT(page, HasSubstr("The MIT License"));
  // Nothing is fetched: no external script, style or image.
  EXPECT_THAT(page, Not(HasSubstr("src=\"http")));
  EXPECT_THAT(page, Not(HasSubstr("href=\"http")));
  EXPECT_THAT(page, Not(HasSubstr("<script src")));
  // The finding's "</script>" cannot end the data element early.
  const size_t begin = page.find("id=\"prism-data\">") + 16;
  const size_t end = page.find("</script>", begin);
  nlohmann::json data = nlohmann::json::parse(page.substr(begin, end - begin));
  EXPECT_EQ(data["findings"][0]["summary"], "GPU 10.0.1.2 computes slowly </script><b>");
  EXPECT_EQ(data["jobs"][0]["timeline"]["rows"].size(), 4u);
  EXPECT_EQ(data["switches"][0]["name"], "spine0");
}

TEST(HtmlReport, TimelineStepsEncodeAdjacentSegments) {
  Report r = testing::ViewsReport();
  nlohmann::json data = BuildHtmlReportData(r);
  const auto& row = data["jobs"][0]["timeline"]["rows"][0];
  const auto& step = row["steps"][0];
  // [start_µs, step index, kind, dur_µs, ...]; durations add up to the step (1 s).
  int64_t total = 0;
  for (size_t i = 3; i < step.size(); i += 2) total += step[i].get<int64_t>();
  EXPECT_EQ(total, 1'000'000);
  EXPECT_EQ(step[1], 0);
  EXPECT_EQ(data["jobs"][0]["heat"]["rows"].size(), 4u);
}

TEST(HtmlReport, SamplesLargeJobsAndSaysSo) {
  Report r = testing::ViewsReport();
  HtmlReportOptions options;
  options.max_gpus_all = 2;
  nlohmann::json data = BuildHtmlReportData(r, options);
  EXPECT_TRUE(data["jobs"][0]["timeline"]["sampled"].get<bool>());
  EXPECT_EQ(data["jobs"][0]["timeline"]["total"], 4);
}

// A counters-mode report (docs/counters.md): one job of two servers, a 2 s iteration period, a
// stall finding naming a server.
Report CountersReport() {
  constexpr int64_t kT0 = 1'700'000'000'000'000'000;
  constexpr int64_t kS = 1'000'000'000;
  Report r;
  r.mode = "counters";
  r.start_ns = kT0;
  r.end_ns = kT0 + 60 * kS;
  r.window_s = 60;
  ReportWindow window;
  window.start_ns = window.records_start_ns = r.start_ns;
  window.end_ns = window.records_end_ns = r.end_ns;
  window.records = 120;
  window.jobs = window.findings = 1;
  r.windows.push_back(window);
  ReportJob job;
  job.id = "job0";
  job.gpus = {*IpAddr::Parse("10.0.0.1"), *IpAddr::Parse("10.0.0.2")};
  job.hosts = {"srv-a", "srv-b"};
  job.step_time = {2.0, 2.1, 25};
  job.windows = 1;
  r.jobs.push_back(job);
  ReportCounters& c = r.counters;
  c.poll_s = c.refresh_s = c.bin_s = 1;
  c.ports = 2;
  c.polls = 120;
  c.servers.push_back({"srv-a", "job0", 40, 2, 0.9, 0.8, {"eth0"}, {40}});
  c.servers.push_back({"srv-b", "job0", 41, 2, 0.9, 0.8, {"eth0"}, {41}});
  c.servers.push_back({"srv-z", "", 1, 0, 0, 0, {"eth0"}, {1}});
  ReportCountersJob cj;
  cj.id = "job0";
  cj.period_s = 2;
  cj.server_gbps = 40;
  cj.nic_names = {"eth0"};
  cj.signature = {1.0};
  for (int i = 0; i < 25; ++i) cj.iterations.emplace_back(kT0 + 2 * i * kS, kT0 + 2 * (i + 1) * kS);
  cj.plot_start_ns = kT0;
  cj.plot_bin_s = 0.5;
  for (int i = 0; i < 120; ++i) cj.traffic_gbps.push_back(i % 4 == 0 ? 160.f : 4.f);
  c.jobs.push_back(cj);
  ReportFinding f;
  f.kind = diagnosis::FindingKind::kJobStall;
  f.severity = diagnosis::Severity::kCritical;
  f.job = "job0";
  f.hosts = {"srv-a", "srv-b"};
  f.start_ns = kT0 + 50 * kS;
  f.end_ns = kT0 + 58 * kS;
  f.metric = "quiet_s";
  f.value = 8;
  f.baseline = 2;
  f.summary = "job0 stalled for 8 s";
  r.findings.push_back(f);
  return r;
}

TEST(HtmlReport, CountersModeHasTrafficPlotWithIterationsAndFindings) {
  Report r = CountersReport();
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlReport(r, &out).has_value());
  const std::string page = out.str();
  // The page's code draws the counters traffic plot into the job's plot container.
  EXPECT_THAT(page, HasSubstr("function trafficPlot("));
  EXPECT_THAT(page, HasSubstr("'plot-' + j.id"));
  const size_t begin = page.find("id=\"prism-data\">") + 16;
  const size_t end = page.find("</script>", begin);
  nlohmann::json data = nlohmann::json::parse(page.substr(begin, end - begin));
  EXPECT_EQ(data["mode"], "counters");
  EXPECT_EQ(data["counters"]["ports"], 2);
  EXPECT_EQ(data["counters"]["servers_in_no_job"], 1);
  const auto& cj = data["jobs"][0]["counters"];
  ASSERT_TRUE(cj.is_object());
  EXPECT_EQ(cj["plot"]["gbps"].size(), 120u);
  EXPECT_DOUBLE_EQ(cj["plot"]["gbps"][0].get<double>(), 160.0);
  EXPECT_DOUBLE_EQ(cj["plot"]["bin_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(cj["plot"]["start_s"].get<double>(), 0.0);
  // Iterations in seconds since the first poll.
  ASSERT_EQ(cj["iterations"].size(), 25u);
  EXPECT_DOUBLE_EQ(cj["iterations"][1][0].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(cj["iterations"][1][1].get<double>(), 4.0);
  EXPECT_EQ(cj["servers"].size(), 2u);  // srv-z is in no job
  // The finding's span, for the shading, and the servers it names.
  EXPECT_DOUBLE_EQ(data["findings"][0]["start_s"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(data["findings"][0]["end_s"].get<double>(), 58.0);
  EXPECT_EQ(data["findings"][0]["hosts"][0], "srv-a");
}

TEST(HtmlReport, FlowModeHasNoCountersData) {
  nlohmann::json data = BuildHtmlReportData(testing::ViewsReport());
  EXPECT_EQ(data["mode"], "flows");
  EXPECT_TRUE(data["counters"].is_null());
  EXPECT_FALSE(data["jobs"][0].contains("counters"));
}

}  // namespace
}  // namespace prism::output
