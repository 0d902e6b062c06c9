#include "output/report_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "output/report.h"
#include "output/report_test_util.h"

namespace prism::output {
namespace {

using analysis::PairLabel;
using diagnosis::Severity;
using nlohmann::json;
using testing::TestWindow;
using ::testing::ElementsAre;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

// Endpoints interned out of address order: 10.0.0.10 gets id 0, 10.0.0.2 id 1, ...
std::vector<std::string> Gpus() {
  return {"10.0.0.10", "10.0.0.2", "10.0.1.1", "10.0.0.1", "10.0.1.3", "10.0.1.2"};
}

// One window with one 2x2x1... job over 4 GPUs on two hosts, pairs, timelines, two findings.
void FillWindow(TestWindow* w) {
  int j = w->AddJob({"10.0.1.1", "10.0.0.10", "10.0.0.2", "10.0.1.2"}, 2, 2, 1,
                    {{"10.0.0.2", "10.0.0.10"}, {"10.0.1.2", "10.0.1.1"}});
  w->AddPair("10.0.1.1", "10.0.0.2", j, PairLabel::kPp);  // a > b: the report swaps them
  w->AddPair("10.0.0.2", "10.0.0.10", j, PairLabel::kDp);
  w->AddPair("10.0.0.1", "10.0.1.3", -1, PairLabel::kUnknown);
  w->AddTimeline("10.0.1.1", j, 1, kT0, {1.0, 1.0, 2.0});
  w->AddTimeline("10.0.0.10", j, 0, kT0, {1.0, 1.0, 1.0, 1.0});
  w->AddFinding("straggler_gpu", Severity::kWarning, j, {"10.0.1.1"}, kT0 + 5 * kSec,
                kT0 + 6 * kSec, 2.0, 1.0);
  auto& f = w->AddFinding("degraded_switch", Severity::kCritical, -1, {}, kT0 + 2 * kSec,
                          kT0 + 9 * kSec, 0.4, 1.0);
  f.switches = {"spine1", "leaf0"};
}

Report OneWindowReport() {
  TestWindow w(kT0, kT0 + 60 * kSec, Gpus());
  FillWindow(&w);
  ReportBuilder b(60);
  b.AddWindow(w.Input());
  b.AddSource("flows.csv", "csv", 6);
  Stats stats;
  stats.Add(Stat::records_read, 6);
  stats.Add(Stat::csv_bad_row, 2);
  b.SetInputStats(stats);
  return b.Build();
}

std::vector<std::string> Strings(const json& arr) {
  std::vector<std::string> out;
  for (const auto& v : arr) out.push_back(v.get<std::string>());
  return out;
}

TEST(ReportJson, HasTheSchemaKeysWithGpusByAddress) {
  json doc = BuildReportJson(OneWindowReport());
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["window"]["start_ns"], kT0);
  EXPECT_EQ(doc["window"]["end_ns"], kT0 + 60 * kSec);
  EXPECT_EQ(doc["window"]["seconds"], 60.0);
  ASSERT_EQ(doc["windows"].size(), 1u);
  EXPECT_EQ(doc["windows"][0]["records"], 3);
  EXPECT_EQ(doc["windows"][0]["jobs"], 1);
  EXPECT_EQ(doc["windows"][0]["records_start_ns"], kT0);
  EXPECT_EQ(doc["windows"][0]["records_end_ns"], kT0 + 1);

  ASSERT_EQ(doc["jobs"].size(), 1u);
  const json& job = doc["jobs"][0];
  EXPECT_EQ(job["id"], "job0");
  EXPECT_THAT(Strings(job["gpus"]), ElementsAre("10.0.0.2", "10.0.0.10", "10.0.1.1", "10.0.1.2"));
  EXPECT_THAT(Strings(job["hosts"]), ElementsAre("h0", "h1"));
  EXPECT_EQ(job["layout"]["dp"], 2);
  EXPECT_EQ(job["layout"]["pp"], 2);
  EXPECT_EQ(job["layout"]["tp"], 1);
  EXPECT_EQ(job["layout"]["microbatches"], 4);
  ASSERT_EQ(job["layout"]["stages"].size(), 2u);
  EXPECT_THAT(Strings(job["layout"]["stages"][0]), ElementsAre("10.0.0.2", "10.0.0.10"));
  EXPECT_THAT(Strings(job["layout"]["stages"][1]), ElementsAre("10.0.1.1", "10.0.1.2"));
  // Seven GPU-steps: six of 1 s and one of 2 s; the most steps of one GPU is 4.
  EXPECT_DOUBLE_EQ(job["step_time"]["median_s"].get<double>(), 1.0);
  EXPECT_GT(job["step_time"]["p99_s"].get<double>(), 1.9);
  EXPECT_EQ(job["step_time"]["steps"], 4);

  // Pairs: a < b in address order, sorted by (a, b); no job -> null.
  const json& pairs = doc["pairs"];
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0]["a"], "10.0.0.1");
  EXPECT_EQ(pairs[0]["b"], "10.0.1.3");
  EXPECT_TRUE(pairs[0]["job"].is_null());
  EXPECT_EQ(pairs[0]["label"], "unknown");
  EXPECT_EQ(pairs[1]["a"], "10.0.0.2");
  EXPECT_EQ(pairs[1]["b"], "10.0.0.10");
  EXPECT_EQ(pairs[1]["label"], "dp");
  EXPECT_EQ(pairs[2]["a"], "10.0.0.2");
  EXPECT_EQ(pairs[2]["b"], "10.0.1.1");
  EXPECT_EQ(pairs[2]["label"], "pp");
  EXPECT_EQ(pairs[2]["job"], "job0");
  EXPECT_EQ(pairs[2]["evidence"]["flows"], 10);
  EXPECT_EQ(pairs[2]["evidence"]["rule"], "test");

  // Timelines by GPU address; steps carry the contract keys; no pp_events unless asked.
  const json& tl = doc["timelines"];
  ASSERT_EQ(tl.size(), 2u);
  EXPECT_EQ(tl[0]["gpu"], "10.0.0.10");
  EXPECT_EQ(tl[0]["job"], "job0");
  EXPECT_EQ(tl[0]["stage"], 0);
  EXPECT_EQ(tl[0]["steps"].size(), 4u);
  EXPECT_EQ(tl[1]["gpu"], "10.0.1.1");
  const json& step = tl[1]["steps"][2];
  EXPECT_EQ(step["start_ns"], kT0 + 2 * kSec);
  EXPECT_EQ(step["end_ns"], kT0 + 4 * kSec);
  for (const char* key : {"dp_start_ns", "dp_end_ns", "compute_ns", "bubble_ns"}) {
    EXPECT_TRUE(step.contains(key)) << key;
  }
  EXPECT_FALSE(step.contains("pp_events"));
  EXPECT_TRUE(BuildReportJson(OneWindowReport(), {.pp_events = true})["timelines"][0]["steps"][0]
                  .contains("pp_events"));

  // Findings by start: the switch finding (t0+2s) before the straggler (t0+5s).
  const json& f = doc["findings"];
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0]["kind"], "degraded_switch");
  EXPECT_EQ(f[0]["severity"], "critical");
  EXPECT_TRUE(f[0]["job"].is_null());
  EXPECT_THAT(Strings(f[0]["switches"]), ElementsAre("leaf0", "spine1"));
  EXPECT_EQ(f[1]["kind"], "straggler_gpu");
  EXPECT_EQ(f[1]["severity"], "warning");
  EXPECT_EQ(f[1]["job"], "job0");
  EXPECT_THAT(Strings(f[1]["gpus"]), ElementsAre("10.0.1.1"));
  EXPECT_EQ(f[1]["cause"], "gpu");
  EXPECT_EQ(f[1]["metric"], "step_duration_s");
  EXPECT_DOUBLE_EQ(f[1]["value"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(f[1]["baseline"].get<double>(), 1.0);
  EXPECT_EQ(f[1]["start_ns"], kT0 + 5 * kSec);
  EXPECT_EQ(f[1]["end_ns"], kT0 + 6 * kSec);

  // Input: every non-zero counter by name, nothing else.
  EXPECT_EQ(doc["input"], (json{{"records_read", 6}, {"csv_bad_row", 2}}));
  EXPECT_EQ(doc["sources"][0]["path"], "flows.csv");
}

TEST(ReportJson, WithoutTimelinesHasOneSummaryPerGpu) {
  const json full = BuildReportJson(OneWindowReport());
  const json doc = BuildReportJson(OneWindowReport(), {.timelines = false});
  EXPECT_FALSE(doc.contains("timelines"));
  EXPECT_FALSE(full.contains("timeline_summaries"));
  const json& s = doc["timeline_summaries"];
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], (json{{"gpu", "10.0.0.10"}, {"job", "job0"}, {"stage", 0}, {"steps", 4},
                        {"start_ns", kT0}, {"end_ns", kT0 + 4 * kSec}, {"median_step_s", 1.0}}));
  // Steps of 1, 1 and 2 s.
  EXPECT_EQ(s[1]["gpu"], "10.0.1.1");
  EXPECT_EQ(s[1]["stage"], 1);
  EXPECT_EQ(s[1]["steps"], 3);
  EXPECT_EQ(s[1]["end_ns"], kT0 + 4 * kSec);
  EXPECT_DOUBLE_EQ(s[1]["median_step_s"].get<double>(), 1.0);
  // Everything else is as in the full report.
  json rest = full;
  rest.erase("timelines");
  json rest_without = doc;
  rest_without.erase("timeline_summaries");
  EXPECT_EQ(rest, rest_without);
}

TEST(ReportJson, SameContentGivesSameBytesWhateverTheEndpointIds) {
  auto render = [](const std::vector<std::string>& order) {
    TestWindow w(kT0, kT0 + 60 * kSec, order);
    FillWindow(&w);
    ReportBuilder b(60);
    b.AddWindow(w.Input());
    std::ostringstream out;
    EXPECT_TRUE(WriteReportJson(b.Build(), &out).has_value());
    return out.str();
  };
  std::vector<std::string> reversed = Gpus();
  std::reverse(reversed.begin(), reversed.end());
  std::string a = render(Gpus());
  EXPECT_EQ(a, render(Gpus()));
  EXPECT_EQ(a, render(reversed));
  // The written text is the JSON document, one array element per line.
  json parsed = json::parse(a);
  TestWindow w(kT0, kT0 + 60 * kSec, Gpus());
  FillWindow(&w);
  ReportBuilder b(60);
  b.AddWindow(w.Input());
  EXPECT_EQ(parsed, BuildReportJson(b.Build()));
  EXPECT_NE(a.find("\n  {\"a\":\"10.0.0.1\""), std::string::npos) << a;
  EXPECT_EQ(a.back(), '\n');
}

// Pairs and timeline summaries are written as text (output/json_text.h), not dumped from the
// document: each line must be the document's element, byte for byte.
TEST(ReportJson, WrittenPairsAndSummariesAreTheDocumentsElementsByteForByte) {
  Report report = OneWindowReport();
  report.pairs[0].evidence.aligned_starts = 1.0 / 3.0;
  report.pairs[1].evidence.step_ordered_share = 0.25;
  report.pairs[1].evidence.rule = "one-way \"data\"";  // escaped by nlohmann
  std::ostringstream out;
  ASSERT_TRUE(WriteReportJson(report, &out, {.timelines = false}).has_value());
  const json doc = BuildReportJson(report, {.timelines = false});
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto expect_lines = [&](const std::string& key) {
    const auto at = std::find(lines.begin(), lines.end(), "\"" + key + "\": [");
    ASSERT_NE(at, lines.end()) << key;
    const json& elements = doc[key];
    ASSERT_GE(elements.size(), 2u);
    for (size_t i = 0; i < elements.size(); ++i) {
      const std::string expected =
          "  " + elements[i].dump(-1, ' ', false, json::error_handler_t::replace) +
          (i + 1 < elements.size() ? "," : "");
      EXPECT_EQ(*(at + 1 + ptrdiff_t(i)), expected) << key << " " << i;
    }
  };
  expect_lines("pairs");
  expect_lines("timeline_summaries");
}

// With threads, the second half of the large arrays (pairs, timeline summaries) is made on a
// second thread: the same bytes as on one, whichever array is split.
TEST(ReportJson, TwoThreadsWriteTheOneThreadBytes) {
  Report report = OneWindowReport();
  const std::vector<ReportPair> pairs = report.pairs;
  const std::vector<ReportTimeline> timelines = report.timelines;
  for (int copy = 1; report.pairs.size() < 9000; ++copy) {  // past the fewest split (4096)
    for (ReportPair p : pairs) {
      p.evidence.aligned_starts = 1.0 / copy;
      report.pairs.push_back(p);
    }
    for (ReportTimeline t : timelines) {
      for (ReportStep& step : t.steps) step.start_ns += copy;
      report.timelines.push_back(t);
    }
  }
  for (bool with_timelines : {false, true}) {
    std::ostringstream one, two;
    ASSERT_TRUE(WriteReportJson(report, &one, {.timelines = with_timelines}).has_value());
    ASSERT_TRUE(
        WriteReportJson(report, &two, {.timelines = with_timelines, .threads = 2}).has_value());
    EXPECT_GT(one.str().size(), size_t{1} << 20);
    EXPECT_TRUE(one.str() == two.str()) << "timelines " << with_timelines;
    EXPECT_EQ(json::parse(two.str()), BuildReportJson(report, {.timelines = with_timelines}));
  }
}

TEST(ReportJson, MergesWindows) {
  std::vector<std::string> job_a = {"10.0.0.2", "10.0.0.10", "10.0.1.1", "10.0.1.2"};
  TestWindow w1(kT0, kT0 + 60 * kSec, Gpus());
  int a1 = w1.AddJob(job_a, 2, 2, 1, {{"10.0.0.2", "10.0.0.10"}, {"10.0.1.1", "10.0.1.2"}});
  w1.AddPair("10.0.0.2", "10.0.0.10", a1, PairLabel::kDp);
  w1.AddPair("10.0.0.2", "10.0.1.1", a1, PairLabel::kDp);  // corrected by window 2
  w1.AddTimeline("10.0.0.2", a1, 0, kT0, {1.0, 1.0});
  w1.AddFinding("slow_step", Severity::kWarning, a1, {}, kT0 + kSec, kT0 + 2 * kSec, 1.5, 1.0);

  // Window 2: the same job (other endpoint ids) plus a new one on lower addresses.
  std::vector<std::string> order2 = {"10.0.1.2", "10.0.0.1", "10.0.0.2", "10.0.1.1",
                                     "10.0.0.10", "10.0.1.3", "10.0.0.3", "10.0.0.4"};
  TestWindow w2(kT0 + 60 * kSec, kT0 + 120 * kSec, order2);
  int b2 = w2.AddJob({"10.0.0.1", "10.0.0.3", "10.0.0.4", "10.0.1.3"}, 4, 1, 1);
  int a2 = w2.AddJob(job_a, 2, 2, 1, {{"10.0.0.2", "10.0.0.10"}, {"10.0.1.1", "10.0.1.2"}});
  w2.AddPair("10.0.0.2", "10.0.0.10", a2, PairLabel::kUnknown);  // does not erase "dp"
  w2.AddPair("10.0.0.2", "10.0.1.1", a2, PairLabel::kPp);        // last known label wins
  w2.AddPair("10.0.0.1", "10.0.0.3", b2, PairLabel::kDp);
  w2.AddTimeline("10.0.0.2", a2, 0, kT0 + 60 * kSec, {2.0});
  w2.AddTimeline("10.0.0.1", b2, -1, kT0 + 60 * kSec, {0.5});
  w2.AddFinding("slow_step", Severity::kWarning, a2, {}, kT0 + 61 * kSec, kT0 + 62 * kSec, 1.5, 1.0);

  ReportBuilder b(60);
  b.AddWindow(w2.Input());  // out of order on purpose
  b.AddWindow(w1.Input());
  json doc = BuildReportJson(b.Build());

  EXPECT_EQ(doc["window"]["start_ns"], kT0);
  EXPECT_EQ(doc["window"]["end_ns"], kT0 + 120 * kSec);
  ASSERT_EQ(doc["windows"].size(), 2u);
  EXPECT_EQ(doc["windows"][0]["start_ns"], kT0);

  // Two jobs, numbered by lowest GPU address: the new job (10.0.0.1) is job0.
  ASSERT_EQ(doc["jobs"].size(), 2u);
  EXPECT_EQ(doc["jobs"][0]["id"], "job0");
  EXPECT_EQ(doc["jobs"][0]["gpus"][0], "10.0.0.1");
  EXPECT_EQ(doc["jobs"][0]["windows"], 1);
  EXPECT_EQ(doc["jobs"][1]["id"], "job1");
  EXPECT_THAT(Strings(doc["jobs"][1]["gpus"]),
              ElementsAre("10.0.0.2", "10.0.0.10", "10.0.1.1", "10.0.1.2"));
  EXPECT_EQ(doc["jobs"][1]["windows"], 2);
  EXPECT_EQ(doc["jobs"][1]["step_time"]["steps"], 3);

  const json& pairs = doc["pairs"];
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0]["a"], "10.0.0.1");
  EXPECT_EQ(pairs[0]["job"], "job0");
  EXPECT_EQ(pairs[1]["b"], "10.0.0.10");
  EXPECT_EQ(pairs[1]["label"], "dp");
  EXPECT_EQ(pairs[1]["job"], "job1");
  EXPECT_EQ(pairs[2]["b"], "10.0.1.1");
  EXPECT_EQ(pairs[2]["label"], "pp");

  // The timeline of 10.0.0.2 holds the steps of both windows in time order.
  const json& tl = doc["timelines"];
  ASSERT_EQ(tl.size(), 2u);
  EXPECT_EQ(tl[0]["gpu"], "10.0.0.1");
  EXPECT_EQ(tl[1]["gpu"], "10.0.0.2");
  EXPECT_EQ(tl[1]["job"], "job1");
  ASSERT_EQ(tl[1]["steps"].size(), 3u);
  EXPECT_EQ(tl[1]["steps"][0]["start_ns"], kT0);
  EXPECT_EQ(tl[1]["steps"][2]["start_ns"], kT0 + 60 * kSec);

  ASSERT_EQ(doc["findings"].size(), 2u);
  EXPECT_EQ(doc["findings"][0]["start_ns"], kT0 + kSec);
  EXPECT_EQ(doc["findings"][0]["job"], "job1");
  EXPECT_EQ(doc["findings"][1]["job"], "job1");
}

// A pair's label comes from the latest window that saw it, unless that window holds fewer than
// half the steps the kept label was decided on (the input's last window, cut short).
TEST(ReportJson, PairLabelOfAShortLastWindowDoesNotReplaceOneOfMoreSteps) {
  const std::vector<std::string> gpus = {"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"};
  TestWindow w1(kT0, kT0 + 60 * kSec, gpus);
  int j1 = w1.AddJob(gpus, 2, 2, 1);
  w1.AddPair("10.0.0.1", "10.0.0.2", j1, PairLabel::kDp, 30);
  w1.AddPair("10.0.0.3", "10.0.0.4", j1, PairLabel::kDp, 30);
  TestWindow w2(kT0 + 60 * kSec, kT0 + 120 * kSec, gpus);
  int j2 = w2.AddJob(gpus, 2, 2, 1);
  w2.AddPair("10.0.0.1", "10.0.0.2", j2, PairLabel::kPp, 14);  // under half: dp stays
  w2.AddPair("10.0.0.3", "10.0.0.4", j2, PairLabel::kPp, 15);  // half: the later window wins
  ReportBuilder b(60);
  b.AddWindow(w1.Input());
  b.AddWindow(w2.Input());
  json doc = BuildReportJson(b.Build());
  ASSERT_EQ(doc["pairs"].size(), 2u);
  EXPECT_EQ(doc["pairs"][0]["label"], "dp");
  EXPECT_EQ(doc["pairs"][0]["evidence"]["steps"], 30);
  EXPECT_EQ(doc["pairs"][1]["label"], "pp");
}

TEST(ReportJson, EmptyReportIsValid) {
  ReportBuilder b(30);
  std::ostringstream out;
  ASSERT_TRUE(WriteReportJson(b.Build(), &out).has_value());
  json doc = json::parse(out.str());
  for (const char* key : {"jobs", "pairs", "timelines", "findings"}) {
    EXPECT_TRUE(doc[key].is_array() && doc[key].empty()) << key;
  }
  EXPECT_TRUE(doc["input"].is_object() && doc["input"].empty());
}

TEST(Quantile, Interpolates) {
  EXPECT_EQ(Quantile({}, 0.5), 0);
  EXPECT_DOUBLE_EQ(Quantile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(Quantile({1, 2}, 1.0), 2);
  EXPECT_NEAR(Quantile({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 11}, 0.99), 10, 1e-9);
}

// Quantile picks the two values around the quantile without sorting them all: exactly the
// values (and so the bits) of interpolating in the sorted order, ties and all.
TEST(Quantile, IsTheSortedOrdersInterpolationExactly) {
  std::mt19937_64 rng(5);
  for (size_t n : {size_t{1}, size_t{2}, size_t{7}, size_t{1000}}) {
    std::vector<double> values(n);
    for (double& v : values) v = static_cast<double>(rng() % 50) / 7.0;
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    for (double q : {0.0, 0.13, 0.5, 0.9, 0.99, 1.0}) {
      const double pos = q * static_cast<double>(n - 1);
      const size_t lo = static_cast<size_t>(std::floor(pos));
      const size_t hi = std::min(lo + 1, n - 1);
      const double want = sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
      EXPECT_EQ(Quantile(values, q), want) << "n " << n << " q " << q;
    }
  }
}

}  // namespace
}  // namespace prism::output
