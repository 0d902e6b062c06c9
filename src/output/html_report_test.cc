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

}  // namespace
}  // namespace prism::output
