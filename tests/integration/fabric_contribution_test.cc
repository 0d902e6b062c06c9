// The fabric stage's seam (diagnosis/rules/fabric_contribution.h, fabric_evaluation.h): a
// window's records split across shards by job, each shard analysed alone, its contribution
// built, and the contributions merged and judged, find the switch and link findings one
// analysis of every record finds.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "analysis/analyze.h"
#include "diagnosis/rules/bandwidth_rule.h"
#include "diagnosis/rules/fabric_contribution.h"
#include "diagnosis/rules/fabric_contribution_codec.h"
#include "diagnosis/rules/fabric_contribution_split.h"
#include "diagnosis/rules/fabric_evaluation.h"
#include "sim/scenarios.h"
#include "sim/simulator.h"

namespace prism {
namespace {

// One analysed window: its records and what analysis made of them.
struct Window {
  flow::FlowTable table;
  analysis::EndpointContext ctx;
  analysis::AnalysisResults results;
};

struct Simulated {
  Window all;
  PointTable points;
  Topology topology;
  int64_t end_ns = 0;
};

const Simulated& ShardsScenario() {
  static const Simulated* s = [] {
    auto* out = new Simulated;
    const sim::SimConfig config = *sim::MakeScenario("shards", 1);
    sim::Cluster cluster(config.fabric);
    const auto truth = sim::Simulate(config, cluster, &out->all.table, &out->points);
    out->end_ns = truth->end_ns;
    out->all.table.SortByStart();
    // A window of 20 s from 5 s in, as a `serve` sliding 20-s windows by 5 s cuts them: its bins
    // start at its first record, which on a shard of some jobs only starts later.
    const auto start = out->all.table.start_ns();
    const int64_t from = start[0] + 5'000'000'000, to = from + 20'000'000'000;
    out->all.table.KeepRows(size_t(std::lower_bound(start.begin(), start.end(), from) - start.begin()),
                            size_t(std::lower_bound(start.begin(), start.end(), to) - start.begin()));
    out->topology = cluster.MakeTopology();
    out->all.ctx = analysis::BuildEndpointContext(out->all.table.endpoints(), &out->topology);
    out->all.results = analysis::Analyze(out->all.table, out->all.ctx, out->end_ns, {}, nullptr);
    return out;
  }();
  return *s;
}

// The records of each shard, a record going with its source's job, else its destination's, else
// to shard 0 (as a routing collector sends them), each shard's window analysed alone.
std::vector<Window> SplitByJob(const Simulated& s, const std::vector<int>& shard_of_job) {
  const flow::FlowTable& f = s.all.table;
  std::vector<Window> shards(size_t(*std::max_element(shard_of_job.begin(), shard_of_job.end()) + 1));
  for (size_t r = 0; r < f.size(); ++r) {
    const int js = s.all.results.job_of[f.src()[r]], jd = s.all.results.job_of[f.dst()[r]];
    const int job = js >= 0 ? js : jd;
    FlowRecord rec;
    rec.start_ns = f.start_ns()[r];
    rec.end_ns = f.EndNs(r);
    rec.src = f.endpoints().Addr(f.src()[r]);
    rec.dst = f.endpoints().Addr(f.dst()[r]);
    rec.bytes = f.Bytes(r);
    rec.qp = f.qp()[r];
    rec.point = f.point()[r];
    rec.sampling_rate = f.SamplingRate(r);
    shards[job < 0 ? 0 : size_t(shard_of_job[size_t(job)])].table.OnRecord(rec);
  }
  for (Window& w : shards) {
    w.table.SortByStart();
    w.ctx = analysis::BuildEndpointContext(w.table.endpoints(), &s.topology);
    w.results = analysis::Analyze(w.table, w.ctx, s.end_ns, {}, nullptr);
  }
  return shards;
}

diagnosis::FabricContribution ContributionOf(const Window& w, const PointTable& points) {
  const diagnosis::DiagnosisOptions o;
  const diagnosis::RuleContext rc{w.table, points, w.ctx, w.results, o};
  return diagnosis::BuildFabricContribution(rc);
}

// A job named by its GPUs (each shard numbers its jobs its own way).
std::string JobGpus(const analysis::AnalysisResults& results, const flow::FlowTable& table,
                    int job) {
  if (job < 0) return "-";
  std::set<std::string> gpus;
  for (EndpointId g : results.jobs[size_t(job)].gpus) gpus.insert(table.endpoints().Addr(g).ToString());
  std::string out;
  for (const auto& g : gpus) out += g + ",";
  return out;
}

// A finding as text, everything it says, with jobs and GPUs by name.
template <typename JobName, typename GpuName>
std::vector<std::string> Describe(const diagnosis::NetworkFindings& n, JobName job, GpuName gpu) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n.findings.size(); ++i) {
    const diagnosis::Finding& f = n.findings[i];
    std::string s = fmt::format("{} {} {} {} {} {:a} {:a} {:a} {} [{}] {} |", int(f.kind),
                                int(f.severity), f.start_ns, f.end_ns, f.units, f.value,
                                f.baseline, f.sigma, f.summary, fmt::join(f.switches, " "),
                                job(f.job));
    for (EndpointId g : f.gpus) s += " " + gpu(g);
    std::set<std::string> affected;
    for (int j : n.jobs_affected[i]) affected.insert(job(j));
    s += fmt::format(" | {}", fmt::join(affected, " "));
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> ReferenceFindings() {
  const Simulated& s = ShardsScenario();
  const diagnosis::DiagnosisOptions o;
  const diagnosis::RuleContext rc{s.all.table, s.points, s.all.ctx, s.all.results, o};
  return Describe(
      diagnosis::FindNetworkDegradation(rc),
      [&](int j) { return JobGpus(s.all.results, s.all.table, j); },
      [&](EndpointId g) { return s.all.table.endpoints().Addr(g).ToString(); });
}

// The merged contribution's findings, jobs named through the shard each came from.
std::vector<std::string> MergedFindings(const std::vector<Window>& shards,
                                        const diagnosis::FabricContribution& merged) {
  std::vector<std::pair<const Window*, int>> job_at;  // merged job -> (shard, its job)
  for (const Window& w : shards)
    for (size_t j = 0; j < w.results.jobs.size(); ++j) job_at.emplace_back(&w, int(j));
  EXPECT_EQ(job_at.size(), merged.jobs.size());
  return Describe(
      diagnosis::EvaluateFabric(merged, {}),
      [&](int j) {
        return j < 0 ? std::string("-")
                     : JobGpus(job_at[size_t(j)].first->results, job_at[size_t(j)].first->table,
                               job_at[size_t(j)].second);
      },
      [&](EndpointId g) { return merged.endpoint_addr[g].ToString(); });
}

std::vector<std::string> ShardedFindings(const std::vector<int>& shard_of_job) {
  const Simulated& s = ShardsScenario();
  const std::vector<Window> shards = SplitByJob(s, shard_of_job);
  std::vector<diagnosis::FabricContribution> parts;
  for (const Window& w : shards) parts.push_back(ContributionOf(w, s.points));
  return MergedFindings(shards, diagnosis::MergeFabricContributions(parts));
}

TEST(FabricContribution, TheScenarioHasAFabricFindingToSplit) {
  const Simulated& s = ShardsScenario();
  ASSERT_EQ(s.all.results.jobs.size(), 3u);
  bool spine = false;
  for (const std::string& f : ReferenceFindings()) spine |= f.find("switch spine01") != std::string::npos;
  EXPECT_TRUE(spine);
}

// The single window's own contribution, judged, is the rule on the window: the records left out
// are none the rule reads.
TEST(FabricContribution, OneWindowsContributionJudgesAsTheWindow) {
  const Simulated& s = ShardsScenario();
  const diagnosis::FabricContribution c = ContributionOf(s.all, s.points);
  EXPECT_LT(c.records(), s.all.table.size());  // storage and control records are left out
  EXPECT_EQ(MergedFindings({s.all}, c), ReferenceFindings());
}

TEST(FabricContribution, TwoShardsMergedJudgeAsOneWindow) {
  EXPECT_EQ(ShardedFindings({0, 1, 1}), ReferenceFindings());
}

TEST(FabricContribution, ThreeShardsMergedJudgeAsOneWindow) {
  EXPECT_EQ(ShardedFindings({0, 1, 2}), ReferenceFindings());
  EXPECT_EQ(ShardedFindings({2, 0, 1}), ReferenceFindings());
}

// What the merge is for: one shard's records alone judge the fabric otherwise (e2e_serve_shards
// saw spine01's degradation end 2.5 ms later on shard 0: its bins started at its own first
// record).
TEST(FabricContribution, OneShardAloneJudgesOtherwise) {
  const Simulated& s = ShardsScenario();
  const std::vector<Window> shards = SplitByJob(s, {0, 1, 1});
  const std::vector<diagnosis::FabricContribution> first = {ContributionOf(shards[0], s.points)};
  EXPECT_NE(MergedFindings({shards[0]}, diagnosis::MergeFabricContributions(first)),
            ReferenceFindings());
}

// An analyser holding several shards by lease analyses their records as one window and
// publishes each shard's part of its contribution: the parts (through their bytes), merged, judge
// as the window, and as the shards' own contributions do.
std::vector<std::string> SplitThenMergedFindings(const std::vector<int>& shard_of_job) {
  const Simulated& s = ShardsScenario();
  const diagnosis::FabricContribution c = ContributionOf(s.all, s.points);
  std::map<IpAddr, int32_t> job_of_addr;
  for (size_t j = 0; j < s.all.results.jobs.size(); ++j)
    for (EndpointId g : s.all.results.jobs[j].gpus)
      job_of_addr[s.all.table.endpoints().Addr(g)] = int32_t(j);
  std::vector<int32_t> endpoint_part;
  for (const IpAddr& a : c.endpoint_addr) {
    auto it = job_of_addr.find(a);
    endpoint_part.push_back(it == job_of_addr.end() ? -1 : shard_of_job[size_t(it->second)]);
  }
  const size_t shards = size_t(*std::max_element(shard_of_job.begin(), shard_of_job.end()) + 1);
  std::vector<diagnosis::FabricContribution> parts;
  for (const auto& part : diagnosis::SplitFabricContribution(c, endpoint_part, shards)) {
    const std::string bytes = diagnosis::EncodeFabricContribution(part);
    auto back = diagnosis::DecodeFabricContribution(
        {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    EXPECT_TRUE(back.has_value());
    if (back) parts.push_back(std::move(*back));
  }
  EXPECT_EQ(parts.size(), shards);
  for (const auto& part : parts) {
    EXPECT_GT(part.records(), 0u);
    EXPECT_EQ(part.first_start_ns, c.first_start_ns);
  }
  const diagnosis::FabricContribution merged = diagnosis::MergeFabricContributions(parts);
  EXPECT_EQ(merged.records(), c.records());
  EXPECT_EQ(merged.pairs.size(), c.pairs.size());
  std::map<std::string, int> job_by_id;
  for (size_t j = 0; j < s.all.results.jobs.size(); ++j) job_by_id[s.all.results.jobs[j].id] = int(j);
  return Describe(
      diagnosis::EvaluateFabric(merged, {}),
      [&](int j) {
        return j < 0 ? std::string("-")
                     : JobGpus(s.all.results, s.all.table, job_by_id.at(merged.jobs[size_t(j)]));
      },
      [&](EndpointId g) { return merged.endpoint_addr[g].ToString(); });
}

TEST(FabricContribution, OneWindowOfHeldShardsSplitAndMergedJudgesAsOneWindow) {
  EXPECT_EQ(SplitThenMergedFindings({0, 1, 1}), ReferenceFindings());
  EXPECT_EQ(SplitThenMergedFindings({0, 1, 2}), ReferenceFindings());
  EXPECT_EQ(SplitThenMergedFindings({1, 0, 0}), ReferenceFindings());
}

// The grid is built in one pass per run of bins when the records are sorted by start, and with
// every bin open at once when they are not. Records whose bins come out of order (the later half
// of the window's bins first, each bin's records in their order, so that every cell sums its
// records in the same order) must judge as the sorted ones.
TEST(FabricContribution, RecordsOutOfStartOrderJudgeAsSorted) {
  const Simulated& s = ShardsScenario();
  const diagnosis::FabricContribution c = ContributionOf(s.all, s.points);
  const int64_t bin_ns = diagnosis::DiagnosisOptions{}.bw_bin_ns;
  const int64_t bins = (c.last_start_ns - c.first_start_ns) / bin_ns + 1;
  ASSERT_GE(bins, 2);
  const int64_t middle = c.first_start_ns + bins / 2 * bin_ns;
  const size_t cut =
      size_t(std::lower_bound(c.start_ns.begin(), c.start_ns.end(), middle) - c.start_ns.begin());
  ASSERT_GT(cut, 0u);
  ASSERT_LT(cut, c.records());
  diagnosis::FabricContribution rotated = c;
  const auto rotate = [cut](auto& column) {
    std::rotate(column.begin(), column.begin() + long(cut), column.end());
  };
  rotate(rotated.start_ns);
  rotate(rotated.end_ns);
  rotate(rotated.bytes);
  rotate(rotated.src);
  rotate(rotated.dst);
  rotate(rotated.point);
  ASSERT_FALSE(std::is_sorted(rotated.start_ns.begin(), rotated.start_ns.end()));
  const std::vector<std::string> sorted = MergedFindings({s.all}, c);
  ASSERT_FALSE(sorted.empty());
  EXPECT_EQ(MergedFindings({s.all}, rotated), sorted);
}

// A part of no record: a shard held with no job in the window still answers for it.
TEST(FabricContribution, AShardOfNoRecordGetsAPartOfNone) {
  const Simulated& s = ShardsScenario();
  const diagnosis::FabricContribution c = ContributionOf(s.all, s.points);
  const std::vector<int32_t> all_first(c.endpoint_addr.size(), 0);
  const auto parts = diagnosis::SplitFabricContribution(c, all_first, 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].records(), c.records());
  EXPECT_EQ(parts[0].endpoint_addr, c.endpoint_addr);
  EXPECT_EQ(parts[0].pairs, c.pairs);
  EXPECT_EQ(parts[1].records(), 0u);
  EXPECT_TRUE(parts[1].endpoint_addr.empty());
  EXPECT_TRUE(parts[1].jobs.empty());
  EXPECT_FALSE(parts[1].empty());  // it saw the window: its span is the window's
}

TEST(FabricContribution, BytesGiveBackTheContribution) {
  const Simulated& s = ShardsScenario();
  const diagnosis::FabricContribution c = ContributionOf(s.all, s.points);
  const std::string bytes = diagnosis::EncodeFabricContribution(c);
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const auto back = diagnosis::DecodeFabricContribution({data, bytes.size()});
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, c);
  EXPECT_FALSE(diagnosis::DecodeFabricContribution({}).has_value());
  const diagnosis::FabricContribution none;
  const std::string none_bytes = diagnosis::EncodeFabricContribution(none);
  const auto none_back = diagnosis::DecodeFabricContribution(
      {reinterpret_cast<const uint8_t*>(none_bytes.data()), none_bytes.size()});
  ASSERT_TRUE(none_back.has_value());
  EXPECT_EQ(*none_back, none);
}

TEST(FabricContribution, BadBytesAreAClearError) {
  const Simulated& s = ShardsScenario();
  const std::string bytes = diagnosis::EncodeFabricContribution(ContributionOf(s.all, s.points));
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const auto cut = diagnosis::DecodeFabricContribution({data, bytes.size() / 2});
  ASSERT_FALSE(cut.has_value());
  EXPECT_NE(cut.error().message.find("fabric contribution: after the header, byte"),
            std::string::npos)
      << cut.error().message;
  std::string longer = bytes + "x";
  const auto extra = diagnosis::DecodeFabricContribution(
      {reinterpret_cast<const uint8_t*>(longer.data()), longer.size()});
  ASSERT_FALSE(extra.has_value());
  EXPECT_NE(extra.error().message.find("bytes after the last record"), std::string::npos);
  std::string wrong = bytes;
  wrong[0] = 'X';
  const auto magic = diagnosis::DecodeFabricContribution(
      {reinterpret_cast<const uint8_t*>(wrong.data()), wrong.size()});
  ASSERT_FALSE(magic.has_value());
  EXPECT_NE(magic.error().message.find("LPFC"), std::string::npos);
}

}  // namespace
}  // namespace prism
