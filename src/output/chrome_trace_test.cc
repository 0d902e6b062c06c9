#include "output/chrome_trace.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "output/report_views_test_util.h"

namespace prism::output {
namespace {

using nlohmann::json;

// ns since the trace origin from a "ts"/"dur" in µs with three decimals (exact up to rounding).
int64_t Ns(const json& us) { return std::llround(us.get<double>() * 1000); }

struct TraceCheck {
  size_t slices = 0, flows = 0, instants = 0, threads = 0;
  // (pid, thread name) -> step slices as (start, end) ns since the origin.
  std::map<std::pair<int, std::string>, std::vector<std::pair<int64_t, int64_t>>> steps;
  int64_t origin_ns = 0;
};

// The invariants every trace must keep, whatever it came from.
void CheckTraceInvariants(const json& trace, TraceCheck* out) {
  TraceCheck& c = *out;
  EXPECT_TRUE(trace.is_object());
  EXPECT_TRUE(trace.contains("traceEvents"));
  c.origin_ns = std::stoll(trace["otherData"]["origin_unix_ns"].get<std::string>());
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int64_t>>> by_thread;
  std::map<uint64_t, int> flow_starts, flow_ends;
  for (const json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid")) << e.dump();
    const std::string ph = e["ph"];
    const int pid = e["pid"];
    const int tid = e.value("tid", 0);
    if (ph == "M") {
      if (e["name"] == "thread_name") thread_names[{pid, tid}] = e["args"]["name"];
      continue;
    }
    ASSERT_TRUE(e.contains("ts")) << e.dump();
    if (ph == "X") {
      ++c.slices;
      ASSERT_GE(e["dur"].get<double>(), 0) << e.dump();
      const int64_t a = Ns(e["ts"]), b = a + Ns(e["dur"]);
      by_thread[{pid, tid}].push_back({a, b});
      if (e["cat"] == "step") c.steps[{pid, thread_names[{pid, tid}]}].push_back({a, b});
    } else if (ph == "s") {
      ++c.flows;
      ++flow_starts[e["id"].get<uint64_t>()];
    } else if (ph == "f") {
      ++flow_ends[e["id"].get<uint64_t>()];
    } else if (ph == "i") {
      ++c.instants;
      EXPECT_TRUE(e["s"] == "t" || e["s"] == "p" || e["s"] == "g") << e.dump();
    } else {
      ADD_FAILURE() << "unexpected phase " << e.dump();
    }
  }
  c.threads = thread_names.size();
  // Slices on one thread nest: any two are disjoint or one contains the other.
  for (auto& [thread, slices] : by_thread) {
    std::sort(slices.begin(), slices.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first < y.first : x.second > y.second;
    });
    std::vector<std::pair<int64_t, int64_t>> stack;
    for (const auto& s : slices) {
      while (!stack.empty() && stack.back().second <= s.first) stack.pop_back();
      if (!stack.empty()) {
        ASSERT_LE(s.second, stack.back().second)
            << "partial overlap on pid " << thread.first << " tid " << thread.second << ": ["
            << s.first << "," << s.second << ") in [" << stack.back().first << ","
            << stack.back().second << ")";
      }
      stack.push_back(s);
    }
  }
  // Every flow start has exactly one finish with the same id, and ids are unique.
  for (const auto& [id, n] : flow_starts) {
    EXPECT_EQ(n, 1) << "flow id " << id;
    EXPECT_EQ(flow_ends[id], 1) << "flow id " << id << " has no finish";
  }
  EXPECT_EQ(flow_starts.size(), flow_ends.size());
}

TEST(ChromeTrace, WellFormedNestedAndMatchesTheReport) {
  Report r = testing::ViewsReport();
  std::ostringstream out;
  ASSERT_TRUE(WriteChromeTrace(r, &out).has_value());
  json trace = json::parse(out.str());
  TraceCheck c;
  ASSERT_NO_FATAL_FAILURE(CheckTraceInvariants(trace, &c));
  EXPECT_EQ(c.threads, 4u);
  EXPECT_EQ(c.flows, 4u * 3);  // one forward and one backward send per replica and step
  EXPECT_EQ(c.instants, 2u);   // on 10.0.1.2's thread, and the switch one (no job) global
  // Step slices land exactly on the report's ns.
  for (const ReportTimeline& t : r.timelines) {
    auto it = c.steps.find({1, t.gpu.ToString() + " stage" + std::to_string(t.stage) + " " +
                                   r.jobs[0].host_of.at(t.gpu)});
    ASSERT_NE(it, c.steps.end()) << t.gpu.ToString();
    ASSERT_EQ(it->second.size(), t.steps.size());
    for (size_t k = 0; k < t.steps.size(); ++k) {
      EXPECT_EQ(c.origin_ns + it->second[k].first, t.steps[k].start_ns);
      EXPECT_EQ(c.origin_ns + it->second[k].second, t.steps[k].end_ns);
    }
  }
}

TEST(ChromeTrace, SamplesLargeJobsUnlessAll) {
  Report r = testing::ViewsReport();
  ChromeTraceOptions options;
  options.max_gpus_all = 1;
  std::ostringstream sampled;
  ASSERT_TRUE(WriteChromeTrace(r, &sampled, options).has_value());
  json s = json::parse(sampled.str());
  EXPECT_TRUE(s["otherData"]["sampled"].get<bool>());
  options.all_gpus = true;
  std::ostringstream all;
  ASSERT_TRUE(WriteChromeTrace(r, &all, options).has_value());
  EXPECT_FALSE(json::parse(all.str())["otherData"]["sampled"].get<bool>());
}

// A trace written by `llmprism analyze --trace` next to its `--report --pp-events`: run by the
// e2e test (tests/e2e/trace.sh) with PRISM_TRACE_FILE and PRISM_TRACE_REPORT; skipped otherwise.
TEST(ChromeTraceFile, ParsesAndMatchesItsReport) {
  const char* trace_path = std::getenv("PRISM_TRACE_FILE");
  const char* report_path = std::getenv("PRISM_TRACE_REPORT");
  if (trace_path == nullptr || report_path == nullptr) GTEST_SKIP() << "no PRISM_TRACE_FILE";
  std::ifstream tf(trace_path), rf(report_path);
  ASSERT_TRUE(tf && rf);
  json trace = json::parse(tf);
  // report.json is one top-level key per line: still one JSON document.
  json report = json::parse(rf);
  TraceCheck c;
  ASSERT_NO_FATAL_FAILURE(CheckTraceInvariants(trace, &c));
  EXPECT_GT(c.slices, 0u);
  EXPECT_GT(c.flows, 0u);
  // Every GPU thread's step slices equal that GPU's steps in the report.
  std::map<std::string, const json*> timeline_of;
  for (const json& t : report["timelines"]) timeline_of[t["gpu"].get<std::string>()] = &t;
  size_t checked = 0;
  for (const auto& [key, slices] : c.steps) {
    const std::string gpu = key.second.substr(0, key.second.find(' '));
    ASSERT_TRUE(timeline_of.count(gpu)) << gpu;
    const json& steps = (*timeline_of[gpu])["steps"];
    ASSERT_EQ(slices.size(), steps.size()) << gpu;
    for (size_t k = 0; k < slices.size(); ++k) {
      EXPECT_EQ(c.origin_ns + slices[k].first, steps[k]["start_ns"].get<int64_t>()) << gpu;
      EXPECT_EQ(c.origin_ns + slices[k].second, steps[k]["end_ns"].get<int64_t>()) << gpu;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
  EXPECT_EQ(c.instants >= report["findings"].size(), true);
}

}  // namespace
}  // namespace prism::output
