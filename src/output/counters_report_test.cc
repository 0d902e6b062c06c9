#include "output/counters_report.h"

#include <gtest/gtest.h>

#include <string>

#include "counters/counters_analysis.h"
#include "counters/counters_test_util.h"
#include "output/report_json.h"
#include "output/text_summary.h"

namespace prism::output {
namespace {

// The common report in counters mode: JSON mode and sections, and the summary's counters view.
TEST(CountersReport, JsonAndSummary) {
  counters::PortTopology topo;
  counters::CountersData data = counters::MakeTwoJobCluster(&topo);
  Stats stats;
  counters::CountersResult r = counters::AnalyzeCounters(data, topo, {}, &stats);
  Report report = BuildCountersReport(r, data, {{"c.csv", "counters-csv", data.rows}}, stats);
  nlohmann::json doc = BuildReportJson(report);
  EXPECT_EQ(doc["mode"], "counters");
  ASSERT_EQ(doc["jobs"].size(), 2u);
  EXPECT_EQ(doc["jobs"][0]["hosts"].size(), 4u);
  EXPECT_EQ(doc["counters"]["jobs"][0]["iterations"].size(), r.jobs[0].iterations.size());
  EXPECT_FALSE(doc["counters"]["jobs"][0]["plot"]["gbps"].empty());
  // The resolution the job's iterations are measured with: two 1 s refresh boundaries.
  EXPECT_DOUBLE_EQ(doc["counters"]["jobs"][0]["resolution"]["limit_s"].get<double>(),
                   r.jobs[0].resolution.limit_s);
  EXPECT_GT(r.jobs[0].resolution.limit_s, 1.9);
  const std::string text = FormatSummary(report, false);
  EXPECT_NE(text.find("Jobs: 2 (from port counters)"), std::string::npos) << text;
  EXPECT_NE(text.find("job_stall"), std::string::npos);
  EXPECT_NE(text.find("resolution: each iteration +-"), std::string::npos) << text;
  EXPECT_NE(text.find("counter polls read"), std::string::npos);
}

}  // namespace
}  // namespace prism::output
