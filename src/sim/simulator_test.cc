#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "sim/scenarios.h"

namespace prism::sim {
namespace {

struct VectorSink : FlowSink {
  std::vector<FlowRecord> records;
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
};

struct Run {
  SimConfig config;
  Truth truth;
  VectorSink sink;
  PointTable points;
};

std::unique_ptr<Run> RunScenario(SimConfig config) {
  auto run = std::make_unique<Run>();
  run->config = config;
  Cluster cluster(config.fabric);
  auto truth = Simulate(config, cluster, &run->sink, &run->points);
  EXPECT_TRUE(truth.has_value()) << truth.error().message;
  run->truth = *truth;
  return run;
}

constexpr uint64_t kControlBytes = 64;

TEST(Simulator, TinyProducesRecordsAndTruth) {
  auto run = RunScenario(*MakeScenario("tiny", 1));
  EXPECT_EQ(run->truth.records, run->sink.records.size());
  EXPECT_GT(run->truth.records, 1000u);
  ASSERT_EQ(run->truth.jobs.size(), 1u);
  EXPECT_EQ(run->truth.jobs[0].gpus.size(), 64u);
  EXPECT_EQ(run->truth.jobs[0].stages.size(), 2u);
  EXPECT_EQ(run->truth.timelines.size(), 64u);
  for (const auto& t : run->truth.timelines) EXPECT_GT(t.steps.size(), 10u) << t.gpu;
  std::set<std::string> labels;
  for (const auto& p : run->truth.pairs) labels.insert(p.label);
  EXPECT_EQ(labels, (std::set<std::string>{"dp", "pp"}));
  for (const auto& r : run->sink.records) {
    EXPECT_LE(r.start_ns, r.end_ns);
    EXPECT_GE(r.end_ns, run->truth.start_ns);
    EXPECT_LT(r.start_ns, run->truth.end_ns);
  }
}

// A checkpoint every N steps: one step in N longer by the pause, exactly N apart.
TEST(Simulator, CheckpointCadencePausesEveryNthStep) {
  SimConfig c = *MakeScenario("tiny", 1);
  c.jobs[0].checkpoint_every_steps = 5;
  c.jobs[0].checkpoint_pause_s = 1.0;
  auto run = RunScenario(c);
  const auto& steps = run->truth.timelines[0].steps;
  ASSERT_GT(steps.size(), 12u);
  std::vector<double> d;
  for (const auto& s : steps) d.push_back((s.end_ns - s.start_ns) / 1e9);
  std::vector<double> sorted = d;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::vector<size_t> long_steps;
  for (size_t i = 0; i < d.size(); ++i)
    if (d[i] > median + 0.8) long_steps.push_back(i);
  ASSERT_GE(long_steps.size(), 2u);
  for (size_t i = 1; i < long_steps.size(); ++i) EXPECT_EQ(long_steps[i] - long_steps[i - 1], 5u);
  for (size_t i : long_steps) EXPECT_NEAR(d[i], median + 1.0, 0.1);
}

TEST(Simulator, IsDeterministicForASeed) {
  auto a = RunScenario(*MakeScenario("tiny", 7));
  auto b = RunScenario(*MakeScenario("tiny", 7));
  auto c = RunScenario(*MakeScenario("tiny", 8));
  ASSERT_EQ(a->sink.records.size(), b->sink.records.size());
  for (size_t i = 0; i < a->sink.records.size(); ++i) {
    EXPECT_EQ(a->sink.records[i].start_ns, b->sink.records[i].start_ns);
    EXPECT_EQ(a->sink.records[i].bytes, b->sink.records[i].bytes);
  }
  bool differs = a->sink.records.size() != c->sink.records.size();
  for (size_t i = 0; !differs && i < a->sink.records.size(); ++i)
    differs = a->sink.records[i].start_ns != c->sink.records[i].start_ns;
  EXPECT_TRUE(differs);
}

// Each true step ends (optimizer end) shortly after that GPU's DP burst.
TEST(Simulator, StepBoundaryFollowsTheGpusDpBurst) {
  auto run = RunScenario(*MakeScenario("tiny", 2));
  std::map<std::string, std::vector<const FlowRecord*>> dp_out;
  std::map<std::pair<std::string, std::string>, std::string> label;
  for (const auto& p : run->truth.pairs) label[{p.a, p.b}] = p.label;
  for (const auto& r : run->sink.records) {
    std::string a = r.src.ToString(), b = r.dst.ToString();
    auto key = r.src < r.dst ? std::make_pair(a, b) : std::make_pair(b, a);
    if (r.bytes > kControlBytes && label[key] == "dp") dp_out[a].push_back(&r);
  }
  const double opt_ms = run->config.jobs[0].optimizer_ms;
  size_t checked = 0;
  for (const auto& t : run->truth.timelines) {
    for (const auto& s : t.steps) {
      int64_t last_dp_end = 0;
      for (const FlowRecord* r : dp_out[t.gpu])
        if (r->end_ns <= s.end_ns && r->end_ns >= s.start_ns) last_dp_end = std::max(last_dp_end, r->end_ns);
      ASSERT_GT(last_dp_end, 0) << t.gpu;
      EXPECT_LE(s.end_ns - last_dp_end, int64_t(opt_ms * 1.3e6)) << t.gpu;
      EXPECT_GE(s.end_ns - last_dp_end, int64_t(opt_ms * 0.7e6)) << t.gpu;
      ++checked;
    }
  }
  EXPECT_GT(checked, 500u);
}

// NCCL rings progress while waiting for a late member: with early ring steps, in the stage-0
// ring of hosts 0-3 waiting for a slow host 1, hosts 2 and 3 send DP bytes before host 1 starts
// (and 3 and 0 receive them), host 0 sends none (host 1 has not posted its buffers) and host 1
// neither sends nor receives any. Without them nothing moves before the late member.
TEST(Simulator, RingEarlyStepsLeaveOnlyTheLateMemberSilent) {
  for (bool early : {false, true}) {
    SimConfig c = *MakeScenario("tiny", 1);
    c.jobs[0].ring_early_steps = early;
    for (int g = 0; g < 8; ++g) {  // host 1: stage 0, replica 1
      FaultConfig f;
      f.kind = FaultKind::kStraggler;
      f.rank = 8 + g;
      f.factor = 2;
      f.end_s = c.duration_s;
      c.faults.push_back(f);
    }
    auto run = RunScenario(c);
    std::map<std::string, int> host;  // GPU address -> host index within the job
    const TruthJob& job = run->truth.jobs[0];
    for (size_t i = 0; i < job.gpus.size(); ++i) host[job.gpus[i]] = static_cast<int>(i / 8);
    std::vector<const FlowRecord*> dp;  // DP data within the stage-0 ring
    std::vector<int64_t> late_starts;   // host 1's DP sends
    for (const auto& r : run->sink.records) {
      const int a = host[r.src.ToString()], b = host[r.dst.ToString()];
      if (r.bytes <= kControlBytes || a > 3 || b > 3 || a == b) continue;
      dp.push_back(&r);
      if (a == 1) late_starts.push_back(r.start_ns);
    }
    std::sort(late_starts.begin(), late_starts.end());
    std::vector<int> sent(4, 0), received(4, 0);
    for (const FlowRecord* r : dp) {
      // The next collective host 1 joins; early = 50-1500 ms before it.
      auto next = std::lower_bound(late_starts.begin(), late_starts.end(), r->start_ns);
      if (next == late_starts.end() || *next - r->start_ns < 50'000'000 ||
          *next - r->start_ns > 1'500'000'000)
        continue;
      ++sent[host[r->src.ToString()]];
      ++received[host[r->dst.ToString()]];
    }
    SCOPED_TRACE(early ? "early steps" : "no early steps");
    EXPECT_EQ(sent[1], 0);
    EXPECT_EQ(received[1], 0);
    EXPECT_EQ(sent[0], 0);
    EXPECT_EQ(received[2], 0);
    EXPECT_EQ(sent[2] > 0, early);
    EXPECT_EQ(sent[3] > 0, early);
    EXPECT_EQ(received[3] > 0, early);
    EXPECT_EQ(received[0] > 0, early);
  }
}

// A PP pair carries one data size per step; control writes are 64 B.
TEST(Simulator, PpPairsCarryOneSizeAndDpPairsSeveral) {
  auto run = RunScenario(*MakeScenario("tiny", 3));
  std::map<std::pair<std::string, std::string>, std::string> label;
  for (const auto& p : run->truth.pairs) label[{p.a, p.b}] = p.label;
  std::map<std::pair<std::string, std::string>, std::set<uint64_t>> sizes;
  for (const auto& r : run->sink.records) {
    if (r.bytes <= kControlBytes) continue;
    std::string a = r.src.ToString(), b = r.dst.ToString();
    sizes[r.src < r.dst ? std::make_pair(a, b) : std::make_pair(b, a)].insert(r.bytes);
  }
  for (const auto& [pair, s] : sizes) {
    if (label[pair] == "pp") {
      EXPECT_EQ(s.size(), 1u);
    } else {
      EXPECT_EQ(s.size(), run->config.jobs[0].bucket_fractions.size());
    }
  }
}

// Every DP edge moves 2(n-1)/n of the gradient per step (ring all-reduce); the active-timeout
// split conserves bytes.
TEST(Simulator, BytesAreConserved) {
  SimConfig config = *MakeScenario("tiny", 4);
  auto whole = RunScenario(config);
  config.noise.active_timeout_ms = 2;
  auto split = RunScenario(config);
  EXPECT_GT(split->sink.records.size(), whole->sink.records.size());
  uint64_t a = 0, b = 0;
  for (const auto& r : whole->sink.records) a += r.bytes;
  for (const auto& r : split->sink.records) b += r.bytes;
  EXPECT_EQ(a, b);

  const JobConfig& job = config.jobs[0];
  const double n = job.dp;
  const double per_step = 2 * (n - 1) / n * job.grad_mib * 1024 * 1024;
  std::map<std::pair<std::string, std::string>, std::string> label;
  for (const auto& p : whole->truth.pairs) label[{p.a, p.b}] = p.label;
  std::map<std::string, std::vector<const FlowRecord*>> dp_out;
  for (const auto& r : whole->sink.records) {
    std::string s = r.src.ToString(), d = r.dst.ToString();
    auto key = r.src < r.dst ? std::make_pair(s, d) : std::make_pair(d, s);
    if (r.bytes > kControlBytes && label[key] == "dp") dp_out[s].push_back(&r);
  }
  size_t checked = 0;
  for (const auto& t : whole->truth.timelines) {
    if (dp_out[t.gpu].empty()) continue;  // its ring successor is on the same host
    for (const auto& step : t.steps) {
      uint64_t bytes = 0;
      for (const FlowRecord* r : dp_out[t.gpu])
        if (r->start_ns >= step.start_ns && r->start_ns < step.end_ns) bytes += r->bytes;
      EXPECT_NEAR(bytes / per_step, 1.0, 1e-6) << t.gpu;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100u);
}

TEST(Simulator, FaultsAreRecordedWithEntitiesAndJobs) {
  SimConfig config = *MakeScenario("faults", 1);
  config.duration_s = 20;
  for (auto& f : config.faults) {
    f.start_s = 2;
    f.end_s = 18;
  }
  auto run = RunScenario(config);
  ASSERT_EQ(run->truth.faults.size(), 3u);
  EXPECT_EQ(run->truth.faults[0].kind, "straggler");
  EXPECT_EQ(run->truth.faults[0].gpus.size(), 1u);
  EXPECT_EQ(run->truth.faults[0].cause, "gpu");
  EXPECT_EQ(run->truth.faults[1].switches, (std::vector<std::string>{"spine03"}));
  EXPECT_FALSE(run->truth.faults[1].jobs.empty());
  EXPECT_EQ(run->truth.faults[2].switches.size(), 2u);
}

TEST(Simulator, RejectsBadLayouts) {
  SimConfig config = *MakeScenario("tiny", 1);
  config.jobs[0].tp = 3;
  Cluster cluster(config.fabric);
  VectorSink sink;
  PointTable points;
  auto truth = Simulate(config, cluster, &sink, &points);
  ASSERT_FALSE(truth.has_value());
  EXPECT_NE(truth.error().message.find("tp"), std::string::npos);
  EXPECT_FALSE(MakeScenario("nope", 1).has_value());
}

}  // namespace
}  // namespace prism::sim
