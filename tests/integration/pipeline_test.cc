// End-to-end properties of analysis + diagnosis on simulated clusters (the simulator's truth is
// the reference): jobs, pair labels, layouts, step boundaries, and the findings for injected faults.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

#include "analysis/analyze.h"
#include "analysis/parallel_for.h"
#include "diagnosis/diagnose.h"
#include "diagnosis/rules/bandwidth_cells.h"
#include "diagnosis/rules/bandwidth_rule.h"
#include "diagnosis/rules/slow_endpoints.h"
#include "flow/row_runs.h"
#include "pipeline/network_rule_beside.h"
#include "sim/scenarios.h"
#include "sim/simulator.h"

namespace prism {
namespace {

struct Run {
  flow::FlowTable table;
  PointTable points;
  sim::Truth truth;
  analysis::EndpointContext ctx;
  analysis::AnalysisResults results;
  std::vector<diagnosis::Finding> findings;
  std::string Ip(EndpointId e) const { return table.endpoints().Addr(e).ToString(); }
};

// Passes on to a table the simulated records that `keep` accepts.
class KeptRecords : public FlowSink {
 public:
  KeptRecords(flow::FlowTable* table, std::function<bool(const FlowRecord&)> keep)
      : table_(*table), keep_(std::move(keep)) {}
  void OnRecord(const FlowRecord& r) override {
    if (keep_(r)) table_.OnRecord(r);
  }

 private:
  flow::FlowTable& table_;
  std::function<bool(const FlowRecord&)> keep_;
};

std::unique_ptr<Run> Analyze(const sim::SimConfig& config,
                             std::function<bool(const FlowRecord&)> keep = nullptr) {
  auto run = std::make_unique<Run>();
  sim::Cluster cluster(config.fabric);
  KeptRecords kept(&run->table, keep ? std::move(keep) : [](const FlowRecord&) { return true; });
  auto truth = sim::Simulate(config, cluster, &kept, &run->points);
  EXPECT_TRUE(truth.has_value());
  run->truth = *truth;
  run->table.SortByStart();
  Topology topo = cluster.MakeTopology();
  run->ctx = analysis::BuildEndpointContext(run->table.endpoints(), &topo);
  run->results = analysis::Analyze(run->table, run->ctx, run->truth.end_ns, {}, nullptr);
  diagnosis::BaselineStore baselines;
  run->findings = diagnosis::Diagnose(run->table, run->points, run->ctx, run->results, {}, &baselines);
  return run;
}

double StepErrorP99(const Run& run) {
  std::map<std::string, const analysis::Timeline*> by_gpu;
  for (const auto& t : run.results.timelines) by_gpu[run.Ip(t.gpu)] = &t;
  std::vector<double> errors;
  for (const auto& tt : run.truth.timelines) {
    const auto* t = by_gpu[tt.gpu];
    if (t == nullptr) continue;
    for (const auto& ts : tt.steps) {
      for (const auto& s : t->steps) {
        const double overlap = double(std::min(s.end_ns, ts.end_ns) - std::max(s.start_ns, ts.start_ns));
        const double dur = double(ts.end_ns - ts.start_ns);
        if (overlap > dur / 2) errors.push_back(std::abs(double(s.end_ns - s.start_ns) - dur) / dur);
      }
    }
  }
  EXPECT_GT(errors.size(), 1000u);
  std::sort(errors.begin(), errors.end());
  return errors[errors.size() * 99 / 100];
}

TEST(Pipeline, TinyJobPairsLayoutAndSteps) {
  auto run = Analyze(*sim::MakeScenario("tiny", 11));
  ASSERT_EQ(run->results.jobs.size(), 1u);
  const auto& job = run->results.jobs[0];
  EXPECT_EQ(job.gpus.size(), run->truth.jobs[0].gpus.size());
  EXPECT_EQ(job.layout.dp, 4);
  EXPECT_EQ(job.layout.pp, 2);
  EXPECT_EQ(job.layout.tp, 8);
  EXPECT_EQ(job.layout.microbatches, 8);
  ASSERT_EQ(job.layout.stages.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    std::vector<std::string> got;
    for (EndpointId g : job.layout.stages[s]) got.push_back(run->Ip(g));
    EXPECT_EQ(got, run->truth.jobs[0].stages[s]) << "stage " << s;
  }
  std::map<std::pair<std::string, std::string>, std::string> truth;
  for (const auto& p : run->truth.pairs) truth[{p.a, p.b}] = p.label;
  ASSERT_EQ(run->results.pairs.size(), truth.size());
  for (const auto& p : run->results.pairs) {
    const std::string expected = truth[std::make_pair(run->Ip(p.a), run->Ip(p.b))];
    EXPECT_EQ(analysis::PairLabelName(p.label), expected);
  }
  EXPECT_LT(StepErrorP99(*run), 0.003);
}

TEST(Pipeline, HealthyClusterRaisesNoWarnings) {
  auto run = Analyze(*sim::MakeScenario("tiny", 12));
  for (const auto& f : run->findings) EXPECT_EQ(f.severity, diagnosis::Severity::kInfo) << f.summary;
}

// Lost records take whole pipeline sends with them; the GPU's op gaps then span several ops. That
// is missing evidence, not a slow GPU.
TEST(Pipeline, LostRecordsMakeNoStraggler) {
  sim::SimConfig config = *sim::MakeScenario("tiny", 12);
  // Few sends per step, each on one QP: one lost record is a missing send.
  config.jobs[0].microbatches = 4;
  config.jobs[0].qps_per_connection = 1;
  config.noise.loss = 0.02;
  auto run = Analyze(config);
  for (const auto& f : run->findings)
    if (f.kind == diagnosis::FindingKind::kStragglerGpu) {
      EXPECT_EQ(f.severity, diagnosis::Severity::kInfo) << f.summary;
    }
}

// `tiny` with one GPU 1.3x slow from 8 to 22 s.
sim::SimConfig TinyWithStraggler() {
  sim::SimConfig config = *sim::MakeScenario("tiny", 13);
  sim::FaultConfig f;
  f.kind = sim::FaultKind::kStraggler;
  f.job = 0;
  f.rank = 8 * 5 + 3;  // stage 1, replica 1: host 5
  f.factor = 1.3;
  f.start_s = 8;
  f.end_s = 22;
  config.faults.push_back(f);
  return config;
}

TEST(Pipeline, StragglerIsFoundAndLocalizedToItsTensorParallelGroup) {
  auto run = Analyze(TinyWithStraggler());
  const std::string slow_gpu = run->truth.faults[0].gpus[0];
  bool found = false;
  for (const auto& finding : run->findings) {
    if (finding.kind != diagnosis::FindingKind::kStragglerGpu ||
        finding.severity == diagnosis::Severity::kInfo) {
      continue;
    }
    std::vector<std::string> gpus;
    for (EndpointId g : finding.gpus) gpus.push_back(run->Ip(g));
    EXPECT_LE(gpus.size(), 8u);
    EXPECT_NE(std::find(gpus.begin(), gpus.end(), slow_gpu), gpus.end());
    EXPECT_EQ(finding.cause, diagnosis::Cause::kGpu);
    EXPECT_LT(finding.start_ns, run->truth.faults[0].end_ns);
    EXPECT_GT(finding.end_ns, run->truth.faults[0].start_ns);
    found = true;
  }
  EXPECT_TRUE(found);
}

// Dropping the steps' PP events once compute and bubble are measured (analyze without an output
// that draws them) changes no step, no count the straggler rule reads and no finding.
TEST(Pipeline, TimelinesWithoutPpEventsMeasureTheSame) {
  auto run = Analyze(TinyWithStraggler());
  analysis::AnalysisOptions lean;
  lean.timelines.keep_pp_events = false;
  const analysis::AnalysisResults without =
      analysis::Analyze(run->table, run->ctx, run->truth.end_ns, lean, nullptr);
  ASSERT_EQ(without.timelines.size(), run->results.timelines.size());
  size_t events = 0;
  for (size_t i = 0; i < without.timelines.size(); ++i) {
    const auto& kept = run->results.timelines[i].steps;
    const auto& lean_steps = without.timelines[i].steps;
    ASSERT_EQ(lean_steps.size(), kept.size());
    for (size_t k = 0; k < kept.size(); ++k) {
      EXPECT_EQ(kept[k].pp_event_count, kept[k].pp_events.size());
      EXPECT_EQ(lean_steps[k].pp_event_count, kept[k].pp_event_count);
      EXPECT_TRUE(lean_steps[k].pp_events.empty());
      EXPECT_EQ(lean_steps[k].start_ns, kept[k].start_ns);
      EXPECT_EQ(lean_steps[k].end_ns, kept[k].end_ns);
      EXPECT_EQ(lean_steps[k].compute_ns, kept[k].compute_ns);
      EXPECT_EQ(lean_steps[k].bubble_ns, kept[k].bubble_ns);
      EXPECT_EQ(lean_steps[k].median_fwd_op_ns, kept[k].median_fwd_op_ns);
      EXPECT_EQ(lean_steps[k].median_bwd_op_ns, kept[k].median_bwd_op_ns);
      events += kept[k].pp_event_count;
    }
  }
  EXPECT_GT(events, 1000u);  // a pipeline job: there were events to drop
  diagnosis::BaselineStore baselines;
  const auto findings =
      diagnosis::Diagnose(run->table, run->points, run->ctx, without, {}, &baselines);
  ASSERT_EQ(findings.size(), run->findings.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    EXPECT_EQ(findings[i].kind, run->findings[i].kind);
    EXPECT_EQ(findings[i].severity, run->findings[i].severity);
    EXPECT_EQ(findings[i].gpus, run->findings[i].gpus);
    EXPECT_EQ(findings[i].summary, run->findings[i].summary);
  }
}

// `tiny` with the NIC link of one GPU 8x slow from 8 to 22 s.
sim::SimConfig TinyWithDegradedLink() {
  sim::SimConfig config = *sim::MakeScenario("tiny", 14);
  sim::FaultConfig f;
  f.kind = sim::FaultKind::kDegradedLink;
  f.job = 0;
  f.rank = 8 * 6 + 2;  // stage 1, replica 2, TP rank 2: host 6
  f.factor = 8;
  f.start_s = 8;
  f.end_s = 22;
  config.faults.push_back(f);
  return config;
}

TEST(Pipeline, DegradedNicLinkIsNamedByItsGpu) {
  auto run = Analyze(TinyWithDegradedLink());
  ASSERT_EQ(run->truth.faults.size(), 1u);
  const sim::TruthFault& fault = run->truth.faults[0];
  EXPECT_EQ(fault.kind, "degraded_link");
  ASSERT_EQ(fault.gpus.size(), 1u);
  ASSERT_EQ(fault.switches.size(), 1u);
  bool found = false;
  for (const auto& finding : run->findings) {
    if (finding.severity == diagnosis::Severity::kInfo) continue;
    if (finding.kind != diagnosis::FindingKind::kDegradedLink) continue;
    ASSERT_EQ(finding.gpus.size(), 1u) << finding.summary;
    EXPECT_EQ(run->Ip(finding.gpus[0]), fault.gpus[0]) << finding.summary;
    EXPECT_EQ(finding.switches, fault.switches);
    EXPECT_EQ(finding.cause, diagnosis::Cause::kNetwork);
    EXPECT_LT(finding.start_ns, fault.end_ns);
    EXPECT_GT(finding.end_ns, fault.start_ns);
    found = true;
  }
  EXPECT_TRUE(found);
}

// With threads the network rule starts when the labels are final and runs beside the analysis's
// later stages (pipeline/network_rule_beside.h): what it finds must be what it finds after them.
TEST(Pipeline, NetworkRuleBesideTheAnalysisFindsWhatItFindsAfter) {
  auto run = Analyze(TinyWithDegradedLink());
  diagnosis::DiagnosisOptions o;
  o.threads = 2;
  pipeline::NetworkRuleBeside beside(run->table, run->points, run->ctx, o);
  analysis::AnalysisOptions threaded;
  threaded.threads = 2;
  size_t labelled_pairs = 0;
  threaded.on_labels_final = [&](const analysis::AnalysisResults& labelled) {
    labelled_pairs = labelled.pairs.size();
    beside.Start(labelled);
  };
  const analysis::AnalysisResults results =
      analysis::Analyze(run->table, run->ctx, run->truth.end_ns, threaded, nullptr);
  ASSERT_TRUE(beside.started());
  EXPECT_EQ(labelled_pairs, results.pairs.size());
  const diagnosis::NetworkFindings early = beside.Take();
  const diagnosis::RuleContext rc{run->table, run->points, run->ctx, run->results, o};
  const diagnosis::NetworkFindings after = diagnosis::FindNetworkDegradation(rc);
  ASSERT_FALSE(after.findings.empty());
  ASSERT_EQ(early.findings.size(), after.findings.size());
  EXPECT_EQ(early.jobs_affected, after.jobs_affected);
  for (size_t i = 0; i < after.findings.size(); ++i) {
    EXPECT_EQ(early.findings[i].summary, after.findings[i].summary);
    EXPECT_EQ(early.findings[i].start_ns, after.findings[i].start_ns);
    EXPECT_EQ(early.findings[i].end_ns, after.findings[i].end_ns);
    EXPECT_EQ(early.findings[i].value, after.findings[i].value);
    EXPECT_EQ(early.findings[i].gpus, after.findings[i].gpus);
    EXPECT_EQ(early.findings[i].switches, after.findings[i].switches);
  }
  // And Diagnose with them gives what it gives when it runs the rule itself, taking them once.
  diagnosis::BaselineStore baselines;
  int taken = 0;
  const auto findings = diagnosis::Diagnose(run->table, run->points, run->ctx, run->results, o,
                                            &baselines, [&] {
                                              ++taken;
                                              return early;
                                            });
  EXPECT_EQ(taken, 1);
  ASSERT_EQ(findings.size(), run->findings.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    EXPECT_EQ(findings[i].summary, run->findings[i].summary);
    EXPECT_EQ(findings[i].cause, run->findings[i].cause);
  }
}

// Each cell's load, jobs and record count are those of the judged records that crossed its element
// in its bin, summed in record order: worked out here record by record from the records' routes
// (RouteElements, as the grid names them) and compared exactly with the grid, which counts them
// only when a bin closes, from the bin's rows grouped by cell.
void ExpectCellsHoldTheirRecords(const diagnosis::RuleContext& rc,
                                 const diagnosis::RecordClasses& classes,
                                 const diagnosis::CellGrid& grid) {
  struct Expected {
    double bytes = 0;
    uint32_t flows = 0;
    uint32_t slow = 0;  // records below the drop threshold
    std::vector<diagnosis::JobCount> jobs;
  };
  std::map<std::tuple<size_t, int64_t, int>, Expected> expected;
  const auto& f = rc.flows;
  for (size_t r = 0; r < f.size(); ++r) {
    const int c = classes.ClassOf(r);
    if (c < 0) continue;
    const int64_t bin = (f.start_ns()[r] - grid.t0) / grid.bin_ns;
    std::vector<long> crossed;
    const EndpointId src = f.src()[r], dst = f.dst()[r];
    for (const auto& el :
         diagnosis::RouteElements(rc, f.point()[r], rc.ctx.leaf[src], rc.ctx.leaf[dst]))
      crossed.push_back(grid.IndexOf(el.name));
    crossed.push_back(grid.AccessLinkOf(src));
    crossed.push_back(grid.AccessLinkOf(dst));
    for (long e : crossed) {
      ASSERT_GE(e, 0);
      Expected& x = expected[{size_t(e), bin, c % 2}];
      x.bytes += double(f.EstimatedBytes(r));
      ++x.flows;
      x.slow += classes.RelativeBandwidth(r) < 1 - rc.options.min_bw_drop;
      auto it = std::find_if(x.jobs.begin(), x.jobs.end(),
                             [&](const diagnosis::JobCount& jc) { return jc.job == c / 2; });
      if (it == x.jobs.end()) x.jobs.push_back({c / 2, 1});
      else ++it->records;
    }
  }
  ASSERT_EQ(expected.size(), grid.cells.size());
  size_t cells_with_slow_records = 0;
  for (const auto& [key, x] : expected) {
    const auto& [e, bin, kind] = key;
    const diagnosis::Cell* cell = grid.Find(e, bin, kind);
    ASSERT_NE(cell, nullptr);
    EXPECT_EQ(cell->bytes, x.bytes);
    EXPECT_EQ(cell->flows, x.flows);
    EXPECT_EQ(cell->slow_count, x.slow);
    cells_with_slow_records += x.slow > 0;
    EXPECT_EQ(grid.JobsOf(*cell), x.jobs);
  }
  EXPECT_GT(grid.cells.size(), 100u);
  EXPECT_GT(cells_with_slow_records, 0u);  // the degraded link's
}

TEST(Pipeline, CellsHoldTheLoadAndJobsOfTheirRecords) {
  auto run = Analyze(TinyWithDegradedLink());
  diagnosis::DiagnosisOptions o;
  const diagnosis::RuleContext rc{run->table, run->points, run->ctx, run->results, o};
  const auto classes = diagnosis::RecordClasses::Measure(rc);
  ExpectCellsHoldTheirRecords(rc, classes, diagnosis::BuildCellGrid(rc, classes));
}

// Routes are numbered through a flat map of packed (point, leaf, leaf) keys, and through a tree
// for ids too large to pack. A leaf numbered past the packed range (2^20 - 1), crossed by the
// first judged record, makes the first route a tree one: every packed route after it must still
// find its own elements, not the tree route's.
TEST(Pipeline, CellsHoldTheirRecordsWhenALeafIdIsBeyondThePackedRange) {
  auto run = Analyze(TinyWithDegradedLink());
  diagnosis::DiagnosisOptions o;
  const diagnosis::RuleContext plain{run->table, run->points, run->ctx, run->results, o};
  const auto classes = diagnosis::RecordClasses::Measure(plain);
  size_t first = 0;
  while (first < run->table.size() && classes.ClassOf(first) < 0) ++first;
  ASSERT_LT(first, run->table.size());
  analysis::EndpointContext ctx = run->ctx;
  const int moved = ctx.leaf[run->table.src()[first]];
  ASSERT_GE(moved, 0);
  const int far = 1 << 20;  // packed as leaf + 1 in 20 bits: out of range
  ctx.leaf_names.resize(size_t(far) + 1);
  ctx.leaf_names[size_t(far)] = ctx.leaf_names[size_t(moved)];
  for (int& leaf : ctx.leaf)
    if (leaf == moved) leaf = far;
  const diagnosis::RuleContext rc{run->table, run->points, ctx, run->results, o};
  ExpectCellsHoldTheirRecords(rc, classes, diagnosis::BuildCellGrid(rc, classes));
}

// TinyWithDegradedLink over 110 s: a window long enough to be cut into three runs of rows
// (flow/row_runs.h), for the passes over the records that run on the threads.
std::unique_ptr<Run> AnalyzeLongWithDegradedLink() {
  sim::SimConfig config = TinyWithDegradedLink();
  config.duration_s = 110;
  return Analyze(config);
}

// The record classes' passes run on the threads, one run of rows each, each further run counting
// the class medians into a part of its own: every record's class and relative bandwidth (its
// bandwidth over its class's median) must be the same doubles on any number of threads. The
// degraded link spreads the bandwidths around the medians.
TEST(Pipeline, RecordClassesAreTheSameOnAnyThreadCount) {
  auto run = AnalyzeLongWithDegradedLink();
  ASSERT_GE(flow::RowRunsFor(run->table.size(), 3), 3u);
  diagnosis::DiagnosisOptions one;
  const diagnosis::RuleContext rc1{run->table, run->points, run->ctx, run->results, one};
  const auto classes1 = diagnosis::RecordClasses::Measure(rc1);
  ASSERT_GE(classes1.classes(), 2u);
  size_t judged = 0;
  for (size_t r = 0; r < run->table.size(); ++r) judged += classes1.ClassOf(r) >= 0;
  ASSERT_GT(judged, run->table.size() / 2);
  for (int threads : {2, 3}) {
    SCOPED_TRACE(threads);
    diagnosis::DiagnosisOptions o;
    o.threads = threads;
    const diagnosis::RuleContext rc{run->table, run->points, run->ctx, run->results, o};
    const auto classes = diagnosis::RecordClasses::Measure(rc);
    ASSERT_EQ(classes.classes(), classes1.classes());
    size_t differ = 0;
    for (size_t r = 0; r < run->table.size(); ++r) {
      const int c = classes1.ClassOf(r);
      differ += classes.ClassOf(r) != c ||
                (c >= 0 && std::bit_cast<uint64_t>(classes.RelativeBandwidth(r)) !=
                               std::bit_cast<uint64_t>(classes1.RelativeBandwidth(r)));
    }
    EXPECT_EQ(differ, 0u);
  }
}

// The record classes' first pass sums the endpoints' paces as it goes (slow_endpoints.h), each
// further run of rows into sums of its own, appended after: the slow endpoints must be those the
// paces' own pass finds, on any number of threads. The degraded NIC link makes some.
TEST(Pipeline, PacesSummedByTheClassesAreThoseOfTheirOwnPass) {
  auto run = AnalyzeLongWithDegradedLink();
  ASSERT_GE(flow::RowRunsFor(run->table.size(), 3), 3u);
  diagnosis::DiagnosisOptions one;
  const diagnosis::RuleContext rc1{run->table, run->points, run->ctx, run->results, one};
  const diagnosis::CellGrid bins = diagnosis::EmptyCellGrid(rc1);
  const std::vector<diagnosis::SlowEndpointBin> own =
      diagnosis::FindSlowEndpoints(rc1, bins.t0, bins.bin_ns, bins.bins);
  ASSERT_FALSE(own.empty());
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(threads);
    diagnosis::DiagnosisOptions o;
    o.threads = threads;
    const diagnosis::RuleContext rc{run->table, run->points, run->ctx, run->results, o};
    diagnosis::PairPaceSums sums(bins.t0, bins.bin_ns, bins.bins);
    diagnosis::RecordClasses::Measure(rc, &sums);
    EXPECT_EQ(diagnosis::FindSlowEndpoints(rc, std::move(sums)), own);
  }
}

// The bandwidth rule runs its passes over the records on the threads (the record classes beside
// the endpoints' own paces, the grid's runs of bins side by side): the grid and the findings must
// not depend on how many there are. One GPU's records of the first 15 s are left out, so that its
// access link is first crossed in a later run of bins.
TEST(Pipeline, DiagnosisIsTheSameOnAnyThreadCount) {
  std::optional<IpAddr> late;
  int64_t first_start_ns = 0;
  auto run = Analyze(TinyWithDegradedLink(), [&](const FlowRecord& r) {
    if (!late) late = r.src, first_start_ns = r.start_ns;
    return (r.src != *late && r.dst != *late) || r.start_ns >= first_start_ns + 15'000'000'000;
  });
  ASSERT_FALSE(run->findings.empty());
  diagnosis::DiagnosisOptions one;
  const diagnosis::RuleContext rc1{run->table, run->points, run->ctx, run->results, one};
  const auto classes = diagnosis::RecordClasses::Measure(rc1);
  const diagnosis::CellGrid grid1 = diagnosis::BuildCellGrid(rc1, classes);
  ASSERT_GE(grid1.bins, 4);
  // On threads each builder takes a run of bins and the later runs' grids are appended to the
  // earlier ones': the window needs elements first crossed in the later half of the bins (made
  // again by a later builder, numbered after the earlier runs' elements on the merge) beside
  // elements crossed in every bin (made by every builder, one element on the merge).
  size_t first_crossed_late = 0, crossed_in_every_bin = 0;
  for (size_t e = 0; e < grid1.elements.size(); ++e) {
    int64_t first = -1, bins_crossed = 0;
    for (int64_t bin = 0; bin < grid1.bins; ++bin) {
      if (grid1.Find(e, bin, 0) == nullptr && grid1.Find(e, bin, 1) == nullptr) continue;
      if (first < 0) first = bin;
      ++bins_crossed;
    }
    first_crossed_late += first >= grid1.bins / 2;
    crossed_in_every_bin += bins_crossed == grid1.bins;
  }
  EXPECT_GE(first_crossed_late, 1u);
  EXPECT_GT(crossed_in_every_bin, 10u);
  for (int threads : {2, 3, 7}) {
    SCOPED_TRACE(threads);
    diagnosis::DiagnosisOptions o;
    o.threads = threads;
    const diagnosis::RuleContext rc{run->table, run->points, run->ctx, run->results, o};
    const diagnosis::CellGrid grid = diagnosis::BuildCellGrid(rc, classes);
    ASSERT_EQ(grid.elements.size(), grid1.elements.size());
    for (size_t e = 0; e < grid.elements.size(); ++e) {
      EXPECT_EQ(grid.elements[e].name, grid1.elements[e].name);
      EXPECT_EQ(grid.elements[e].endpoint, grid1.elements[e].endpoint);
    }
    EXPECT_EQ(grid.cell_of, grid1.cell_of);
    EXPECT_EQ(grid.index, grid1.index);
    EXPECT_EQ(grid.access_link_of, grid1.access_link_of);
    ASSERT_EQ(grid.cells.size(), grid1.cells.size());
    for (size_t c = 0; c < grid.cells.size(); ++c) {
      EXPECT_EQ(grid.cells[c].flows, grid1.cells[c].flows);
      EXPECT_EQ(grid.cells[c].typical, grid1.cells[c].typical);
      EXPECT_EQ(grid.cells[c].bytes, grid1.cells[c].bytes);
      const auto slow = grid.SlowOf(grid.cells[c]), slow1 = grid1.SlowOf(grid1.cells[c]);
      EXPECT_TRUE(std::equal(slow.begin(), slow.end(), slow1.begin(), slow1.end()));
      EXPECT_EQ(grid.JobsOf(grid.cells[c]), grid1.JobsOf(grid1.cells[c]));
    }
    diagnosis::BaselineStore baselines;
    const auto findings =
        diagnosis::Diagnose(run->table, run->points, run->ctx, run->results, o, &baselines);
    ASSERT_EQ(findings.size(), run->findings.size());
    for (size_t i = 0; i < findings.size(); ++i) {
      EXPECT_EQ(findings[i].summary, run->findings[i].summary);
      EXPECT_EQ(findings[i].start_ns, run->findings[i].start_ns);
      EXPECT_EQ(findings[i].value, run->findings[i].value);
      EXPECT_EQ(findings[i].gpus, run->findings[i].gpus);
      EXPECT_EQ(findings[i].switches, run->findings[i].switches);
    }
  }
}

// The analysis splits its work over the threads by pairs (classification, the TP passes, the
// step-order pass, the PP pairs' per-step measures), DP groups and jobs: its results must not
// depend on how many there are. Pairs' labels, rules and per-step evidence, DP groups, layouts
// and timelines are compared with one thread's.
TEST(Pipeline, AnalysisIsTheSameOnAnyThreadCount) {
  auto run = Analyze(TinyWithDegradedLink());
  const analysis::AnalysisResults& one = run->results;
  size_t measured_pp = 0, step_ordered = 0;
  for (const auto& p : one.pairs) {
    measured_pp += p.label == analysis::PairLabel::kPp && p.evidence.per_step_from_a > 0;
    step_ordered += p.evidence.step_ordered_share >= 0;
  }
  EXPECT_GT(one.pairs.size(), analysis::kPairsPerChunk);  // more than one chunk per pass
  EXPECT_GT(measured_pp, 8u);
  EXPECT_GT(step_ordered, 8u);
  for (int threads : {2, 3}) {
    SCOPED_TRACE(threads);
    analysis::AnalysisOptions o;
    o.threads = threads;
    const analysis::AnalysisResults many =
        analysis::Analyze(run->table, run->ctx, run->truth.end_ns, o, nullptr);
    EXPECT_EQ(many.job_of, one.job_of);
    EXPECT_EQ(many.dp_group_of, one.dp_group_of);
    ASSERT_EQ(many.jobs.size(), one.jobs.size());
    for (size_t j = 0; j < one.jobs.size(); ++j) {
      EXPECT_EQ(many.jobs[j].gpus, one.jobs[j].gpus);
      EXPECT_EQ(many.jobs[j].layout.dp, one.jobs[j].layout.dp);
      EXPECT_EQ(many.jobs[j].layout.pp, one.jobs[j].layout.pp);
      EXPECT_EQ(many.jobs[j].layout.tp, one.jobs[j].layout.tp);
      EXPECT_EQ(many.jobs[j].layout.microbatches, one.jobs[j].layout.microbatches);
      EXPECT_EQ(many.jobs[j].layout.stages, one.jobs[j].layout.stages);
    }
    ASSERT_EQ(many.pairs.size(), one.pairs.size());
    for (size_t i = 0; i < one.pairs.size(); ++i) {
      const analysis::Pair &x = many.pairs[i], &y = one.pairs[i];
      EXPECT_EQ(x.a, y.a) << i;
      EXPECT_EQ(x.b, y.b) << i;
      EXPECT_EQ(x.label, y.label) << i;
      EXPECT_EQ(x.evidence.rule, y.evidence.rule) << i;
      EXPECT_EQ(x.evidence.transfers, y.evidence.transfers) << i;
      EXPECT_EQ(x.evidence.first_from_a, y.evidence.first_from_a) << i;
      EXPECT_EQ(x.evidence.per_step_from_a, y.evidence.per_step_from_a) << i;
      EXPECT_EQ(x.evidence.per_step_from_b, y.evidence.per_step_from_b) << i;
      EXPECT_EQ(x.evidence.step_ordered_share, y.evidence.step_ordered_share) << i;
    }
    ASSERT_EQ(many.timelines.size(), one.timelines.size());
    for (size_t t = 0; t < one.timelines.size(); ++t) {
      EXPECT_EQ(many.timelines[t].gpu, one.timelines[t].gpu);
      ASSERT_EQ(many.timelines[t].steps.size(), one.timelines[t].steps.size());
      for (size_t k = 0; k < one.timelines[t].steps.size(); ++k) {
        EXPECT_EQ(many.timelines[t].steps[k].start_ns, one.timelines[t].steps[k].start_ns);
        EXPECT_EQ(many.timelines[t].steps[k].end_ns, one.timelines[t].steps[k].end_ns);
      }
    }
  }
}

}  // namespace
}  // namespace prism
