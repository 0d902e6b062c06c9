#include "eval/eval.h"
#include "testing/temp_path.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace prism::eval {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Two jobs on six GPUs:
//   job0: 2 (dp) x 2 (pp) x 1 (tp), stages [[A1, A2], [A3, A4]]: dp pairs A1-A2, A3-A4;
//         pp pairs A1-A3, A2-A4.
//   job1: 2 x 1 x 1 on B1, B2: one dp pair.
constexpr const char* kA1 = "10.0.0.1";
constexpr const char* kA2 = "10.0.0.2";
constexpr const char* kA3 = "10.0.0.3";
constexpr const char* kA4 = "10.0.0.4";
constexpr const char* kB1 = "10.0.1.1";
constexpr const char* kB2 = "10.0.1.2";

json Job(const std::string& id, std::vector<std::string> gpus, int dp, int pp, int tp,
         std::vector<std::vector<std::string>> stages) {
  return {{"id", id},
          {"gpus", gpus},
          {"hosts", json::array()},
          {"layout", {{"dp", dp}, {"pp", pp}, {"tp", tp}, {"stages", stages}}}};
}

json Pair(const std::string& a, const std::string& b, const std::string& job,
          const std::string& label) {
  return {{"a", a}, {"b", b}, {"job", job}, {"label", label}};
}

json Step(int64_t start_ns, int64_t end_ns) { return {{"start_ns", start_ns}, {"end_ns", end_ns}}; }

json Timeline(const std::string& gpu, const std::string& job, json steps) {
  return {{"gpu", gpu}, {"job", job}, {"steps", std::move(steps)}};
}

json Truth() {
  return {
      {"version", 1},
      {"jobs",
       {Job("job0", {kA1, kA2, kA3, kA4}, 2, 2, 1, {{kA1, kA2}, {kA3, kA4}}),
        Job("job1", {kB1, kB2}, 2, 1, 1, {{kB1, kB2}})}},
      {"pairs",
       {Pair(kA1, kA2, "job0", "dp"), Pair(kA3, kA4, "job0", "dp"), Pair(kA1, kA3, "job0", "pp"),
        Pair(kA2, kA4, "job0", "pp"), Pair(kB1, kB2, "job1", "dp")}},
      {"timelines",
       {Timeline(kA1, "job0", {Step(0, 1'000'000), Step(1'000'000, 2'000'000)}),
        Timeline(kB1, "job1", {Step(0, 2'000'000)})}},
      {"faults", json::array()},
  };
}

// A report equal to the truth, but with the analyser's own job ids in the other order.
json PerfectReport() {
  json t = Truth();
  json r = {{"version", 1}, {"window", {{"start_ns", 0}, {"end_ns", 1}, {"seconds", 60}}}};
  r["jobs"] = {Job("rjob0", {kB2, kB1}, 2, 1, 1, {{kB2, kB1}}),
               Job("rjob1", {kA4, kA3, kA2, kA1}, 2, 2, 1, {{kA2, kA1}, {kA4, kA3}})};
  r["pairs"] = json::array();
  for (json p : t["pairs"]) {
    std::swap(p["a"], p["b"]);  // unordered: the report may list (b, a)
    p["job"] = "whatever";
    r["pairs"].push_back(p);
  }
  r["timelines"] = t["timelines"];
  r["findings"] = json::array();
  r["input"] = json::object();
  return r;
}

EvalResult MustEvaluate(const json& truth, const json& report, const EvalOptions& opt = {}) {
  auto r = Evaluate(truth, report, opt);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : EvalResult{};
}

// ---- perfect ----------------------------------------------------------------------------

TEST(EvalTest, PerfectReportScoresOne) {
  EvalResult r = MustEvaluate(Truth(), PerfectReport());
  EXPECT_DOUBLE_EQ(r.jobs_exact_fraction, 1.0);
  EXPECT_DOUBLE_EQ(r.jobs_ari, 1.0);
  EXPECT_DOUBLE_EQ(r.pairs_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(r.layout_exact_fraction, 1.0);
  ASSERT_TRUE(r.step_error_p50 && r.step_error_p99 && r.step_error_max);
  EXPECT_DOUBLE_EQ(*r.step_error_p50, 0.0);
  EXPECT_DOUBLE_EQ(*r.step_error_p99, 0.0);
  EXPECT_DOUBLE_EQ(*r.step_error_max, 0.0);
  EXPECT_DOUBLE_EQ(r.steps_matched_fraction, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_precision, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_recall, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_cause_fraction, 1.0);
  EXPECT_EQ(r.counts.truth_gpus, 6u);
  EXPECT_EQ(r.counts.truth_pairs, 5u);
  EXPECT_EQ(r.counts.pairs_extra, 0u);
  EXPECT_EQ(r.counts.truth_steps, 3u);
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].report_id, "rjob1");
  EXPECT_EQ(r.jobs[1].report_id, "rjob0");
  EXPECT_EQ(r.jobs[0].layout, "2x2x1");
  EXPECT_TRUE(r.jobs[0].layout_exact);
  EXPECT_EQ(r.jobs[0].pairs_correct, 4u);
}

TEST(EvalTest, JsonHasEveryHeadlineKey) {
  json j = EvalResultToJson(MustEvaluate(Truth(), PerfectReport()));
  for (const char* key :
       {"jobs_exact_fraction", "jobs_ari", "pairs_accuracy", "layout_exact_fraction",
        "step_error_p50", "step_error_p99", "step_error_max", "faults_precision", "faults_recall",
        "faults_localized_fraction", "faults_cause_fraction", "steps_matched_fraction"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_number()) << key;
  }
  EXPECT_EQ(j["details"]["jobs"].size(), 2u);
  EXPECT_EQ(j["details"]["layouts"].size(), 2u);
  EXPECT_EQ(j["details"]["counts"]["truth_pairs"], 5);
  std::string text = FormatEvalText(MustEvaluate(Truth(), PerfectReport()));
  EXPECT_THAT(text, HasSubstr("jobs_ari"));
  EXPECT_THAT(text, HasSubstr("2x2x1"));
}

// ---- jobs -------------------------------------------------------------------------------

TEST(EvalTest, AdjustedRandIndexMatchesHandComputedTables) {
  // Contingency [[2,0,0],[0,1,1]]: sum C(n_ij,2) = 1, rows 1+1 = 2, cols 1, C(4,2) = 6,
  // expected 2*1/6 = 1/3, max (2+1)/2 = 3/2: ARI = (1 - 1/3) / (3/2 - 1/3) = 4/7.
  std::vector<int64_t> a = {0, 0, 1, 1}, b = {0, 0, 1, 2};
  EXPECT_NEAR(AdjustedRandIndex(a, b), 4.0 / 7.0, 1e-12);
  EXPECT_NEAR(AdjustedRandIndex(b, a), 4.0 / 7.0, 1e-12);  // symmetric
  // Renaming labels changes nothing.
  std::vector<int64_t> c = {7, 7, 3, 3};
  EXPECT_NEAR(AdjustedRandIndex(a, c), 1.0, 1e-12);
  // One block against all singletons: index 0 = expected 0.
  std::vector<int64_t> one = {0, 0, 0, 0}, singles = {0, 1, 2, 3};
  EXPECT_NEAR(AdjustedRandIndex(one, singles), 0.0, 1e-12);
  // Degenerate identical partitions.
  EXPECT_DOUBLE_EQ(AdjustedRandIndex(singles, singles), 1.0);
  EXPECT_DOUBLE_EQ(AdjustedRandIndex(one, one), 1.0);
}

TEST(EvalTest, SplitJobLowersExactAndAri) {
  json report = PerfectReport();
  report["jobs"] = {Job("r0", {kA1, kA2}, 2, 1, 1, {{kA1, kA2}}),
                    Job("r1", {kA3, kA4}, 2, 1, 1, {{kA3, kA4}}),
                    Job("r2", {kB1, kB2}, 2, 1, 1, {{kB1, kB2}})};
  EvalResult r = MustEvaluate(Truth(), report);
  EXPECT_DOUBLE_EQ(r.jobs_exact_fraction, 0.5);
  // Truth [0,0,0,0,1,1] vs report [0,0,1,1,2,2]: cells 1+1+1 = 3, rows 6+1 = 7, cols 3,
  // C(6,2) = 15, expected 7*3/15 = 1.4, max 5: ARI = 1.6 / 3.6 = 4/9.
  EXPECT_NEAR(r.jobs_ari, 4.0 / 9.0, 1e-12);
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_FALSE(r.jobs[0].exact);
  EXPECT_EQ(r.jobs[0].report_id, "r0");  // tie of overlap 2: first report job
  EXPECT_EQ(r.jobs[0].overlap_gpus, 2u);
  EXPECT_FALSE(r.jobs[0].layout_exact);
  EXPECT_TRUE(r.jobs[1].exact);
  EXPECT_DOUBLE_EQ(r.layout_exact_fraction, 0.5);
}

TEST(EvalTest, GpuMissingFromReportIsASingleton) {
  json report = PerfectReport();
  report["jobs"] = {Job("r0", {kA1, kA2, kA3}, 2, 2, 1, {{kA1, kA2}, {kA3}}),
                    Job("r1", {kB1, kB2}, 2, 1, 1, {{kB1, kB2}})};
  EvalResult r = MustEvaluate(Truth(), report);
  // Truth [0,0,0,0,1,1] vs report [0,0,0,s,1,1]: cells 3+0+1 = 4, rows 7, cols 3+0+1 = 4,
  // expected 28/15, max 11/2: ARI = (4 - 28/15) / (11/2 - 28/15) = 64/109.
  EXPECT_NEAR(r.jobs_ari, 64.0 / 109.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.jobs_exact_fraction, 0.5);
  EXPECT_EQ(r.jobs[0].overlap_gpus, 3u);
}

TEST(EvalTest, EmptyReportScoresZero) {
  json report = PerfectReport();
  report["jobs"] = json::array();
  report["pairs"] = json::array();
  report["timelines"] = json::array();
  EvalResult r = MustEvaluate(Truth(), report);
  EXPECT_DOUBLE_EQ(r.jobs_exact_fraction, 0.0);
  EXPECT_NEAR(r.jobs_ari, 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.pairs_accuracy, 0.0);
  EXPECT_EQ(r.counts.pairs_missing, 5u);
  EXPECT_DOUBLE_EQ(r.layout_exact_fraction, 0.0);
  EXPECT_TRUE(r.jobs[0].report_id.empty());
  EXPECT_FALSE(r.step_error_p50.has_value());
  EXPECT_DOUBLE_EQ(r.steps_matched_fraction, 0.0);
  json j = EvalResultToJson(r);
  EXPECT_TRUE(j["step_error_p99"].is_null());
  EXPECT_TRUE(j["details"]["jobs"][0]["report_id"].is_null());
}

// ---- pairs ------------------------------------------------------------------------------

TEST(EvalTest, MislabelledMissingAndExtraPairs) {
  json report = PerfectReport();
  report["pairs"] = {Pair(kA1, kA2, "r", "dp"), Pair(kA3, kA4, "r", "dp"),
                     Pair(kA3, kA1, "r", "dp"),  // truth: pp
                     // A2-A4 missing
                     Pair(kB1, kB2, "r", "dp"), Pair(kA1, kB1, "r", "dp")};  // extra
  EvalResult r = MustEvaluate(Truth(), report);
  EXPECT_DOUBLE_EQ(r.pairs_accuracy, 3.0 / 5.0);
  EXPECT_EQ(r.counts.pairs_correct, 3u);
  EXPECT_EQ(r.counts.pairs_wrong_label, 1u);
  EXPECT_EQ(r.counts.pairs_missing, 1u);
  EXPECT_EQ(r.counts.pairs_extra, 1u);
  EXPECT_EQ(r.jobs[0].pairs_total, 4u);
  EXPECT_EQ(r.jobs[0].pairs_correct, 2u);
  EXPECT_EQ(r.jobs[1].pairs_correct, 1u);
  ASSERT_EQ(r.layouts.size(), 2u);
  EXPECT_EQ(r.layouts[0].layout, "2x1x1");
  EXPECT_EQ(r.layouts[0].pairs_correct, 1u);
  EXPECT_EQ(r.layouts[1].layout, "2x2x1");
  EXPECT_EQ(r.layouts[1].pairs_total, 4u);
  EXPECT_EQ(r.layouts[1].pairs_correct, 2u);
  // Jobs are untouched by pair errors.
  EXPECT_DOUBLE_EQ(r.jobs_exact_fraction, 1.0);
}

TEST(EvalTest, TensorParallelPairsAreScoredLikeDpAndPp) {
  json truth = Truth();
  truth["pairs"].push_back(Pair(kA1, kB2, "job0", "tp"));  // e.g. TP peers in two hosts
  json report = PerfectReport();
  report["pairs"].push_back(Pair(kB2, kA1, "r", "tp"));
  EvalResult r = MustEvaluate(truth, report);
  EXPECT_DOUBLE_EQ(r.pairs_accuracy, 1.0);
  EXPECT_EQ(r.counts.truth_pairs, 6u);
  report["pairs"].back()["label"] = "dp";
  r = MustEvaluate(truth, report);
  EXPECT_DOUBLE_EQ(r.pairs_accuracy, 5.0 / 6.0);
  EXPECT_EQ(r.counts.pairs_wrong_label, 1u);
  truth["pairs"].back()["label"] = "dp";
  report["pairs"].back()["label"] = "tp";  // a DP pair called TP is wrong too
  r = MustEvaluate(truth, report);
  EXPECT_EQ(r.counts.pairs_wrong_label, 1u);
}

TEST(EvalTest, ExtraPairsLabelledDpPpOrTpAreCountedAsErrors) {
  json report = PerfectReport();
  report["pairs"].push_back(Pair(kA1, kB1, "r", "dp"));       // not in the truth, labelled
  report["pairs"].push_back(Pair(kA2, kB1, "r", "tp"));       // likewise
  report["pairs"].push_back(Pair(kA3, kB1, "r", "unknown"));  // seen, no claim: not an error
  EvalResult r = MustEvaluate(Truth(), report);
  EXPECT_DOUBLE_EQ(r.pairs_accuracy, 1.0);  // accuracy is over truth pairs only
  EXPECT_EQ(r.counts.pairs_extra, 3u);
  EXPECT_EQ(r.counts.pairs_extra_labelled, 2u);
  json j = EvalResultToJson(r);
  EXPECT_EQ(j["pairs_extra_labelled"], 2);  // top level, beside the headline metrics
  EXPECT_EQ(j["details"]["counts"]["pairs_extra_labelled"], 2);
  EXPECT_THAT(FormatEvalText(r), HasSubstr("pairs_extra_labelled"));
  EXPECT_EQ(MustEvaluate(Truth(), PerfectReport()).counts.pairs_extra_labelled, 0u);
}

TEST(EvalTest, UnknownLabelIsWrong) {
  json report = PerfectReport();
  report["pairs"][0]["label"] = "unknown";
  EvalResult r = MustEvaluate(Truth(), report);
  EXPECT_DOUBLE_EQ(r.pairs_accuracy, 4.0 / 5.0);
}

// ---- layout -----------------------------------------------------------------------------

TEST(EvalTest, WrongStageOrderIsNotExact) {
  json report = PerfectReport();
  // Explicit arrays: a braced list of two-element lists would build a JSON object.
  report["jobs"][1]["layout"]["stages"] =
      json::array({json::array({kA3, kA4}), json::array({kA1, kA2})});
  EvalResult r = MustEvaluate(Truth(), report);
  EXPECT_DOUBLE_EQ(r.layout_exact_fraction, 0.5);
  EXPECT_DOUBLE_EQ(r.jobs_exact_fraction, 1.0);
  const JobDetail& j = r.jobs[0];
  EXPECT_TRUE(j.dp_match);
  EXPECT_TRUE(j.pp_match);
  EXPECT_TRUE(j.tp_match);
  EXPECT_FALSE(j.order_match);
  EXPECT_FALSE(j.layout_exact);
  EXPECT_TRUE(r.jobs[1].layout_exact);
  json d = EvalResultToJson(r)["details"]["jobs"][0]["layout_match"];
  EXPECT_EQ(d["order"], false);
  EXPECT_EQ(d["dp"], true);
}

TEST(EvalTest, WrongDegreesAreReportedSeparately) {
  json report = PerfectReport();
  report["jobs"][1]["layout"]["tp"] = 2;
  report["jobs"][0]["layout"]["dp"] = 1;
  report["jobs"][0]["layout"]["pp"] = 2;
  EvalResult r = MustEvaluate(Truth(), report);
  EXPECT_DOUBLE_EQ(r.layout_exact_fraction, 0.0);
  EXPECT_FALSE(r.jobs[0].tp_match);
  EXPECT_TRUE(r.jobs[0].order_match);
  EXPECT_FALSE(r.jobs[1].dp_match);
  EXPECT_FALSE(r.jobs[1].pp_match);
  EXPECT_TRUE(r.jobs[1].tp_match);
}

// ---- steps ------------------------------------------------------------------------------

TEST(EvalTest, StepErrorsUseNearestRank) {
  constexpr int64_t kGap = 10'000'000, kDur = 1'000'000;
  json truth = Truth();
  json truth_steps = json::array(), report_steps = json::array();
  const double errs[] = {0.0, 0.01, 0.02, 0.10};
  for (int k = 0; k < 4; ++k) {
    truth_steps.push_back(Step(k * kGap, k * kGap + kDur));
    int64_t off = static_cast<int64_t>(errs[k] * kDur);
    // Alternate longer and shorter report steps: the error is absolute.
    int64_t dur = k % 2 ? kDur + off : kDur - off;
    report_steps.push_back(Step(k * kGap, k * kGap + dur));
  }
  // Fifth step: the report step overlaps exactly half, which is not enough.
  truth_steps.push_back(Step(4 * kGap, 4 * kGap + kDur));
  report_steps.push_back(Step(4 * kGap + kDur / 2, 4 * kGap + kDur / 2 + kDur));
  // A zero-length truth step is skipped, not scored.
  truth_steps.push_back(Step(5 * kGap, 5 * kGap));
  truth["timelines"] = {Timeline(kA1, "job0", truth_steps),
                        Timeline(kA2, "job0", {Step(0, kDur)})};  // no report timeline
  json report = PerfectReport();
  report["timelines"] = {Timeline(kA1, "r", report_steps)};
  EvalResult r = MustEvaluate(truth, report);
  EXPECT_EQ(r.counts.truth_steps, 6u);
  EXPECT_EQ(r.counts.steps_matched, 4u);
  EXPECT_EQ(r.counts.steps_invalid, 1u);
  EXPECT_DOUBLE_EQ(r.steps_matched_fraction, 4.0 / 6.0);
  ASSERT_TRUE(r.step_error_p50.has_value());
  // Errors {0, .01, .02, .10}: p50 = rank ceil(2) = 2nd, p99 = rank ceil(3.96) = 4th.
  EXPECT_DOUBLE_EQ(*r.step_error_p50, 0.01);
  EXPECT_DOUBLE_EQ(*r.step_error_p99, 0.10);
  EXPECT_DOUBLE_EQ(*r.step_error_max, 0.10);
  EXPECT_EQ(r.jobs[0].steps_total, 6u);
  EXPECT_EQ(r.jobs[0].steps_matched, 4u);
}

TEST(EvalTest, StepMatchesTheLargestOverlap) {
  json truth = Truth();
  truth["timelines"] = {Timeline(kA1, "job0", {Step(1000, 2000)})};
  json report = PerfectReport();
  // Overlaps 400 (duration 500) and 600 (duration 1100): the second wins, error 0.1.
  report["timelines"] = {Timeline(kA1, "r", {Step(900, 1400), Step(1400, 2500)})};
  EvalResult r = MustEvaluate(truth, report);
  ASSERT_TRUE(r.step_error_max.has_value());
  EXPECT_NEAR(*r.step_error_max, 0.1, 1e-12);
  EXPECT_EQ(r.counts.steps_matched, 1u);
}

TEST(EvalTest, NearestRankPercentile) {
  std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_DOUBLE_EQ(NearestRankPercentile(v, 50), 5);
  EXPECT_DOUBLE_EQ(NearestRankPercentile(v, 99), 10);
  EXPECT_DOUBLE_EQ(NearestRankPercentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(NearestRankPercentile(v, 100), 10);
  std::vector<double> one = {0.5};
  EXPECT_DOUBLE_EQ(NearestRankPercentile(one, 50), 0.5);
}

// ---- faults -----------------------------------------------------------------------------

constexpr int64_t kSec = 1'000'000'000;

json Fault(const std::string& id, const std::string& kind, const std::string& cause,
           std::vector<std::string> gpus, std::vector<std::string> switches,
           std::vector<std::string> jobs, int64_t start_ns, int64_t end_ns) {
  return {{"id", id},         {"kind", kind},         {"cause", cause},
          {"gpus", gpus},     {"switches", switches}, {"jobs", jobs},
          {"start_ns", start_ns}, {"end_ns", end_ns}, {"factor", 1.5}};
}

json Finding(const std::string& kind, const std::string& severity, const std::string& job,
             std::vector<std::string> gpus, std::vector<std::string> switches,
             const std::string& cause, int64_t start_ns, int64_t end_ns) {
  json f = {{"kind", kind},   {"severity", severity}, {"gpus", gpus},
            {"switches", switches}, {"cause", cause}, {"start_ns", start_ns},
            {"end_ns", end_ns}, {"summary", "x"}};
  if (!job.empty()) f["job"] = job;
  return f;
}

TEST(EvalTest, FaultsMatchedUnmatchedFalsePositiveAndWrongCause) {
  json truth = Truth();
  truth["faults"] = {
      Fault("f0", "straggler", "gpu", {kA3}, {}, {"job0"}, 100 * kSec, 200 * kSec),
      Fault("f1", "degraded_switch", "network", {}, {"spine1"}, {"job0", "job1"}, 300 * kSec,
            400 * kSec),
      Fault("f2", "congested_link", "network", {}, {"leaf1", "spine2"}, {"job1"}, 500 * kSec,
            600 * kSec),
  };
  json report = PerfectReport();
  report["findings"] = {
      // #0: f0, right GPU and cause. Starts 3 s after the fault ends: inside the 5 s slack.
      Finding("straggler_gpu", "warning", "rjob1", {kA3}, {}, "gpu", 203 * kSec, 210 * kSec),
      // #1: f1, right switch, wrong cause.
      Finding("degraded_switch", "critical", "", {}, {"spine1"}, "gpu", 310 * kSec, 320 * kSec),
      // #2: info findings are not scored even where they would match.
      Finding("slow_step", "info", "rjob0", {}, {"leaf1"}, "network", 510 * kSec, 520 * kSec),
      // #3: false positive: right job, but 10 s after f0 ended and nowhere near another fault.
      Finding("slow_step", "warning", "rjob1", {}, {}, "unknown", 210 * kSec, 220 * kSec),
  };
  EvalResult r = MustEvaluate(truth, report);
  EXPECT_EQ(r.counts.findings, 4u);
  EXPECT_EQ(r.counts.findings_scored, 3u);
  EXPECT_EQ(r.counts.findings_matching, 2u);
  EXPECT_DOUBLE_EQ(r.faults_precision, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.faults_recall, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.faults_cause_fraction, 1.0 / 3.0);
  ASSERT_EQ(r.faults.size(), 3u);
  EXPECT_THAT(r.faults[0].matching_findings, ElementsAre(0u));
  EXPECT_EQ(r.faults[0].localizing_finding, 0u);
  EXPECT_EQ(r.faults[0].cause_finding, 0u);
  EXPECT_THAT(r.faults[1].matching_findings, ElementsAre(1u));
  EXPECT_EQ(r.faults[1].localizing_finding, 1u);
  EXPECT_FALSE(r.faults[1].cause_finding.has_value());
  EXPECT_TRUE(r.faults[2].matching_findings.empty());
  EXPECT_THAT(r.false_positive_findings, ElementsAre(3u));
  json j = EvalResultToJson(r)["details"]["faults"];
  EXPECT_EQ(j[1]["localizing_finding"], 1);
  EXPECT_TRUE(j[1]["cause_finding"].is_null());
  EXPECT_EQ(j[2]["matched"], false);

  // A tighter slack drops finding #0.
  EvalOptions tight;
  tight.time_slack_ns = 2 * kSec;
  EvalResult r2 = MustEvaluate(truth, report, tight);
  EXPECT_TRUE(r2.faults[0].matching_findings.empty());
  EXPECT_DOUBLE_EQ(r2.faults_recall, 1.0 / 3.0);
}

// A congested_link finding on a link the simulated fabric congested by itself (truth
// fabric_events) is left out of precision; one on another link, or at another time, is false.
TEST(EvalTest, FindingOnTheFabricsOwnCongestionIsNotScored) {
  json truth = Truth();
  truth["faults"] = {
      Fault("f0", "straggler", "gpu", {kA3}, {}, {"job0"}, 100 * kSec, 200 * kSec)};
  truth["fabric_events"] = {{{"kind", "congested_link"},
                             {"switches", {"leaf-p015-r2", "spine00"}},
                             {"direction", "down"},
                             {"start_ns", 0},
                             {"end_ns", 20 * kSec},
                             {"squeezed_share", 0.9}}};
  json report = PerfectReport();
  report["findings"] = {
      Finding("straggler_gpu", "warning", "rjob1", {kA3}, {}, "gpu", 120 * kSec, 130 * kSec),
      // #1: the fabric's own congestion, switches in the other order.
      Finding("congested_link", "warning", "", {}, {"spine00", "leaf-p015-r2"}, "network",
              0, 10 * kSec),
      // #2: the same link 60 s later: false.
      Finding("congested_link", "warning", "", {}, {"leaf-p015-r2", "spine00"}, "network",
              80 * kSec, 90 * kSec),
      // #3: another link at the same time: false.
      Finding("congested_link", "warning", "", {}, {"leaf-p015-r2", "spine01"}, "network",
              0, 10 * kSec),
  };
  EvalResult r = MustEvaluate(truth, report);
  EXPECT_EQ(r.counts.findings_scored, 4u);
  EXPECT_EQ(r.counts.findings_on_fabric_events, 1u);
  EXPECT_DOUBLE_EQ(r.faults_precision, 1.0 / 3.0);
  EXPECT_THAT(r.false_positive_findings, ElementsAre(2u, 3u));
  EXPECT_EQ(EvalResultToJson(r)["details"]["counts"]["findings_on_fabric_events"], 1);

  // Without fabric_events (older truths, the corpus) the same finding is false.
  truth.erase("fabric_events");
  EvalResult r2 = MustEvaluate(truth, report);
  EXPECT_EQ(r2.counts.findings_on_fabric_events, 0u);
  EXPECT_DOUBLE_EQ(r2.faults_precision, 1.0 / 4.0);
}

TEST(EvalTest, FindingNamesFaultJobThroughReportJobId) {
  json truth = Truth();
  truth["faults"] = {Fault("f0", "straggler", "gpu", {kA3}, {}, {"job0"}, 0, 10 * kSec)};
  json report = PerfectReport();
  // rjob1 is the report's name for truth job0; rjob0 is job1.
  report["findings"] = {Finding("slow_step", "warning", "rjob1", {}, {}, "gpu", 0, kSec)};
  EvalResult r = MustEvaluate(truth, report);
  EXPECT_DOUBLE_EQ(r.faults_recall, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 0.0);  // names no GPU
  report["findings"][0]["job"] = "rjob0";
  r = MustEvaluate(truth, report);
  EXPECT_DOUBLE_EQ(r.faults_recall, 0.0);
  EXPECT_DOUBLE_EQ(r.faults_precision, 0.0);
}

TEST(EvalTest, StragglerLocalisationAllowsOneTensorParallelGroup) {
  json truth = Truth();
  truth["faults"] = {Fault("f0", "straggler", "gpu", {kA3}, {}, {"job0"}, 0, 10 * kSec)};
  std::vector<std::string> eight = {kA3};
  for (int i = 0; i < 7; ++i) eight.push_back(fmt::format("10.0.9.{}", i));
  std::vector<std::string> nine = eight;
  nine.push_back("10.0.9.99");
  json report = PerfectReport();
  report["findings"] = {Finding("straggler_gpu", "warning", "", nine, {}, "gpu", 0, kSec)};
  EvalResult r = MustEvaluate(truth, report);
  EXPECT_DOUBLE_EQ(r.faults_recall, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 0.0);
  EXPECT_DOUBLE_EQ(r.faults_cause_fraction, 0.0);  // cause needs a localising finding
  report["findings"][0]["gpus"] = eight;
  r = MustEvaluate(truth, report);
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_cause_fraction, 1.0);
  EvalOptions strict;
  strict.max_localized_gpus = 1;
  r = MustEvaluate(truth, report, strict);
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 0.0);
}

TEST(EvalTest, SwitchAndLinkLocalisation) {
  json truth = Truth();
  truth["faults"] = {
      Fault("sw", "degraded_switch", "network", {}, {"spine1"}, {}, 0, 10 * kSec),
      Fault("ln", "congested_link", "network", {}, {"leaf1", "spine2"}, {}, 100 * kSec,
            110 * kSec),
  };
  auto eval = [&](std::vector<std::string> sw_switches, std::vector<std::string> ln_switches) {
    json report = PerfectReport();
    report["findings"] = {
        Finding("degraded_switch", "warning", "", {}, sw_switches, "network", 0, kSec),
        Finding("congested_link", "warning", "", {}, ln_switches, "network", 100 * kSec,
                101 * kSec)};
    return MustEvaluate(truth, report);
  };
  EvalResult r = eval({"spine1"}, {"leaf1"});  // one end, 1 entry
  EXPECT_TRUE(r.faults[0].localizing_finding.has_value());
  EXPECT_TRUE(r.faults[1].localizing_finding.has_value());
  r = eval({"spine1", "leaf7"}, {"spine2", "leaf9"});  // 2 entries each
  EXPECT_TRUE(r.faults[0].localizing_finding.has_value());
  EXPECT_TRUE(r.faults[1].localizing_finding.has_value());
  r = eval({"spine1", "leaf7", "leaf8"}, {"spine2", "leaf8", "leaf9"});  // 3 entries each
  EXPECT_FALSE(r.faults[0].localizing_finding.has_value());
  EXPECT_FALSE(r.faults[1].localizing_finding.has_value());
  EXPECT_DOUBLE_EQ(r.faults_recall, 1.0);
  r = eval({"spine1"}, {"spine2", "leaf1", "leaf9"});  // both ends among 3
  EXPECT_TRUE(r.faults[1].localizing_finding.has_value());
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 1.0);
}

// A degraded host link (one host's NIC to its switch) is localised by naming the GPU(s) behind
// it; the switch alone has many links, so naming only it matches the fault but does not localise.
TEST(EvalTest, DegradedLinkIsLocalisedByItsGpus) {
  json truth = Truth();
  truth["faults"] = {Fault("dl", "degraded_link", "network", {kA3}, {"br0"}, {"job0"},
                           100 * kSec, 120 * kSec)};
  auto eval = [&](std::vector<std::string> gpus, std::vector<std::string> switches,
                  const std::string& cause, const std::string& job = "") {
    json report = PerfectReport();
    report["findings"] = {Finding("congested_link", "warning", job, gpus, switches, cause,
                                  105 * kSec, 110 * kSec)};
    return MustEvaluate(truth, report);
  };
  EvalResult r = eval({}, {"br0"}, "network");
  EXPECT_DOUBLE_EQ(r.faults_recall, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 0.0);
  r = eval({kA3}, {"br0"}, "network");
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_cause_fraction, 1.0);
  r = eval({kA3, kA4}, {}, "gpu");  // localised, wrong cause
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_cause_fraction, 0.0);
  r = eval({kA1, kA2, kA3, kA4, kB1, kB2, "10.0.2.1", "10.0.2.2", "10.0.2.3"}, {}, "network");
  EXPECT_DOUBLE_EQ(r.faults_recall, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 0.0);  // 9 GPUs: not localised
  r = eval({kA4}, {}, "network", "rjob1");  // another host of the job: matches, not localised
  EXPECT_DOUBLE_EQ(r.faults_recall, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 0.0);
}

TEST(EvalTest, PrecisionAndRecallEdgeCases) {
  json truth = Truth();
  json report = PerfectReport();
  // Neither findings nor faults.
  EvalResult r = MustEvaluate(truth, report);
  EXPECT_DOUBLE_EQ(r.faults_precision, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_recall, 1.0);
  // Findings without faults.
  report["findings"] = {Finding("slow_step", "critical", "rjob0", {}, {}, "gpu", 0, kSec)};
  r = MustEvaluate(truth, report);
  EXPECT_DOUBLE_EQ(r.faults_precision, 0.0);
  EXPECT_DOUBLE_EQ(r.faults_recall, 1.0);
  // Faults without findings.
  truth["faults"] = {Fault("f0", "straggler", "gpu", {kA3}, {}, {"job0"}, 0, kSec)};
  report["findings"] = json::array();
  r = MustEvaluate(truth, report);
  EXPECT_DOUBLE_EQ(r.faults_precision, 1.0);
  EXPECT_DOUBLE_EQ(r.faults_recall, 0.0);
  EXPECT_DOUBLE_EQ(r.faults_localized_fraction, 0.0);
  EXPECT_DOUBLE_EQ(r.faults_cause_fraction, 0.0);
}

// ---- malformed input --------------------------------------------------------------------

std::string ErrorOf(const json& truth, const json& report) {
  auto r = Evaluate(truth, report);
  EXPECT_FALSE(r.has_value());
  return r ? "" : r.error().message;
}

TEST(EvalTest, MissingKeysAreNamed) {
  json truth = Truth();
  truth.erase("jobs");
  EXPECT_EQ(ErrorOf(truth, PerfectReport()), "truth: missing key 'jobs'");

  json report = PerfectReport();
  report["jobs"][1]["layout"].erase("stages");
  EXPECT_EQ(ErrorOf(Truth(), report), "report: jobs[1].layout: missing key 'stages'");

  report = PerfectReport();
  report["timelines"][0]["steps"][1].erase("end_ns");
  EXPECT_EQ(ErrorOf(Truth(), report), "report: timelines[0].steps[1]: missing key 'end_ns'");

  report = PerfectReport();
  report.erase("findings");
  EXPECT_EQ(ErrorOf(Truth(), report), "report: missing key 'findings'");

  // A report written without --timelines says how to get the steps.
  report = PerfectReport();
  report["timeline_summaries"] = json::array();
  report.erase("timelines");
  EXPECT_EQ(ErrorOf(Truth(), report),
            "report: has timeline summaries but no per-step timelines: write the report with "
            "`llmprism analyze --timelines`");

  truth = Truth();
  truth["faults"] = {{{"id", "f0"}, {"kind", "straggler"}, {"cause", "gpu"}, {"start_ns", 0}}};
  EXPECT_EQ(ErrorOf(truth, PerfectReport()), "truth: faults[0]: missing key 'end_ns'");
}

TEST(EvalTest, WrongTypesAreNamed) {
  json truth = Truth();
  truth["pairs"][0]["a"] = 17;
  EXPECT_EQ(ErrorOf(truth, PerfectReport()), "truth: pairs[0].a: expected string, got number");

  json report = PerfectReport();
  report["jobs"][0]["gpus"][1] = nullptr;
  EXPECT_EQ(ErrorOf(Truth(), report), "report: jobs[0].gpus[1]: expected string, got null");

  report = PerfectReport();
  report["timelines"][0]["steps"][0]["start_ns"] = 1.5;
  EXPECT_EQ(ErrorOf(Truth(), report),
            "report: timelines[0].steps[0].start_ns: expected integer, got number");

  EXPECT_EQ(ErrorOf(json::array(), PerfectReport()), "truth: top level: expected object, got array");
}

class EvalFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = prism::testing::UniqueTempPath("eval_test", "_" + name);
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) std::remove(p.c_str());
  }
  std::vector<std::string> paths_;
};

TEST_F(EvalFileTest, ParseErrorNamesFileAndPosition) {
  std::string path = Write("bad.json", "{\n  \"jobs\": [1, 2,\n}");
  auto r = LoadJsonFile(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(r.error().message, HasSubstr(path));
  EXPECT_THAT(r.error().message, HasSubstr("line 3, column 1"));
}

TEST_F(EvalFileTest, MissingFileIsNotFound) {
  auto r = EvaluateFiles("/nonexistent/truth.json", "/nonexistent/report.json");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(r.error().message, HasSubstr("/nonexistent/truth.json"));
}

TEST_F(EvalFileTest, MissingKeyNamesFile) {
  json report = PerfectReport();
  report.erase("pairs");
  std::string truth_path = Write("truth.json", Truth().dump());
  std::string report_path = Write("report.json", report.dump());
  auto r = EvaluateFiles(truth_path, report_path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, report_path + ": missing key 'pairs'");

  std::string ok_path = Write("report_ok.json", PerfectReport().dump());
  auto ok = EvaluateFiles(truth_path, ok_path);
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  EXPECT_DOUBLE_EQ(ok->pairs_accuracy, 1.0);
}

}  // namespace
}  // namespace prism::eval
