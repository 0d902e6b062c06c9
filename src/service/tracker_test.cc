#include "service/tracker.h"

#include <gtest/gtest.h>


#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <new>
#include <regex>
#include <set>
#include <string>

#include "sim/scenarios.h"
#include "sim/simulator.h"
#include "service/stable_ids.h"
#include "service/window_buffer.h"
#include "testing/temp_path.h"

// While armed, every allocation of at least this many bytes fails with std::bad_alloc, as a real
// out-of-memory would inside the analysis (this replaces the global operator new of the unit-test
// binary; disarmed it only forwards to malloc).
static std::atomic<size_t> g_fail_allocations_from{0};

void* operator new(std::size_t n) {
  const size_t from = g_fail_allocations_from.load(std::memory_order_relaxed);
  if (from != 0 && n >= from) throw std::bad_alloc();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// GCC pairs operator new with the built-in delete and warns that free() meets a pointer from
// operator new; these replacements allocate with malloc, so free() is the matching call.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace prism::service {
namespace {

struct Records : FlowSink {
  std::vector<FlowRecord> all;
  void OnRecord(const FlowRecord& r) override { all.push_back(r); }
};

constexpr int64_t kMinute = 60'000'000'000;

// The `tiny` scenario (64 GPUs, 30 s) as one window of a 60-s window buffer; "job B" is a copy of
// its records on other addresses (10.x.y.z -> 10.(x+1).y.z), for tests that need jobs the tracker
// can meet in different orders. (Without a topology the tracker recognises 8 jobs in each copy.)
class TrackerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto config = sim::MakeScenario("tiny", 1);
    ASSERT_TRUE(config);
    sim::Cluster cluster(config->fabric);
    records_ = new Records;
    points_ = new PointTable;
    ASSERT_TRUE(sim::Simulate(*config, cluster, records_, points_));
    copy_ = new std::vector<FlowRecord>;
    for (FlowRecord r : records_->all) {
      r.src = IpAddr::FromV4(r.src.v4() + (1u << 16));
      r.dst = IpAddr::FromV4(r.dst.v4() + (1u << 16));
      copy_->push_back(r);
    }
  }
  static void TearDownTestSuite() {
    delete records_;
    delete points_;
    delete copy_;
  }
  // The scenario's records, `shift_ns` later.
  Window TheWindow(int64_t shift_ns = 0) { return JobsWindow(shift_ns, true, false); }
  // The records of job A (the scenario's), of job B (the copy) or both, `shift_ns` later.
  Window JobsWindow(int64_t shift_ns, bool job_a, bool job_b) {
    WindowBufferOptions o;  // 60 s windows, 10 s steps
    buffer_ = std::make_unique<WindowBuffer>(o);
    uint64_t added = 0;
    auto add = [&](const std::vector<FlowRecord>& records) {
      for (FlowRecord r : records) {
        r.start_ns += shift_ns;
        r.end_ns += shift_ns;
        EXPECT_EQ(buffer_->Add(r), WindowBuffer::AddResult::kAccepted);
        ++added;
      }
    };
    if (job_a) add(records_->all);
    if (job_b) add(*copy_);
    buffer_->Flush();
    Window w;
    EXPECT_TRUE(buffer_->TakeDue(&w));
    EXPECT_EQ(w.records, added);
    return w;
  }
  static Records* records_;
  static PointTable* points_;
  static std::vector<FlowRecord>* copy_;
  std::unique_ptr<WindowBuffer> buffer_;
};
Records* TrackerTest::records_ = nullptr;
std::vector<FlowRecord>* TrackerTest::copy_ = nullptr;
PointTable* TrackerTest::points_ = nullptr;

// Out of memory inside a window's analysis: the window is reported as not analysed (a
// telemetry_loss finding, the snapshot's counters), nothing of it is kept, and the next window
// is analysed as if nothing had happened.
TEST_F(TrackerTest, OutOfMemoryInAWindowIsReportedAndTheNextOneIsAnalysed) {
  TrackerOptions options;
  Tracker tracker(options, nullptr);
  Store::WindowWrite write;

  Window window = TheWindow();
  g_fail_allocations_from = 256 << 10;  // the window's columns are larger than this
  Status st = tracker.AnalyzeWindow(std::move(window), *points_, WindowLoss{}, &write);
  g_fail_allocations_from = 0;
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("out of memory"), std::string::npos) << st.error().message;
  ASSERT_EQ(write.findings.size(), 1u);
  EXPECT_EQ(write.findings[0]->finding.kind, diagnosis::FindingKind::kTelemetryLoss);
  EXPECT_EQ(write.findings[0]->finding.metric, "window_not_analysed");
  EXPECT_EQ(write.findings[0]->finding.value, static_cast<double>(records_->all.size()));
  auto failed = tracker.BuildSnapshot();
  EXPECT_EQ(failed->windows_analysed, 0u);
  EXPECT_EQ(failed->windows_failed, 1u);
  EXPECT_TRUE(failed->jobs.empty());
  EXPECT_TRUE(tracker.baselines().empty());
  ASSERT_EQ(failed->recent_incomplete.size(), 1u);
  EXPECT_NE(failed->recent_incomplete[0].failed.find("std::bad_alloc"), std::string::npos);

  ASSERT_TRUE(tracker.AnalyzeWindow(TheWindow(), *points_, WindowLoss{}, &write));
  auto ok = tracker.BuildSnapshot();
  EXPECT_EQ(ok->windows_analysed, 1u);
  ASSERT_TRUE(ok->report);
  EXPECT_EQ(ok->report->input.Get(Stat::records_read), records_->all.size());
  // The same as a tracker that never failed.
  Tracker fresh(options, nullptr);
  ASSERT_TRUE(fresh.AnalyzeWindow(TheWindow(), *points_, WindowLoss{}, &write));
  auto want = fresh.BuildSnapshot();
  ASSERT_FALSE(want->jobs.empty());
  ASSERT_EQ(ok->jobs.size(), want->jobs.size());
  for (size_t i = 0; i < ok->jobs.size(); ++i) EXPECT_EQ(ok->jobs[i].gpus, want->jobs[i].gpus);
  EXPECT_EQ(tracker.baselines().size(), fresh.baselines().size());
  EXPECT_EQ(*ok->dashboard_json, *want->dashboard_json);
}

// Loss on the way to a window: a telemetry_loss finding with the share lost, and the window's
// report lists the records lost by reason.
TEST_F(TrackerTest, LossOnTheWayIsAFindingAndInTheReport) {
  Tracker tracker(TrackerOptions{}, nullptr);
  Store::WindowWrite write;
  WindowLoss loss;
  loss.accepted = records_->all.size();
  loss.lost = {{"socket", 600}, {"late", 47}, {"queue_full", 0}};
  output::Report report;
  ASSERT_TRUE(tracker.AnalyzeWindow(TheWindow(), *points_, loss, &write, &report));
  const StoredFinding* f = nullptr;
  for (const StoredFinding* x : write.findings) {
    if (x->finding.kind == diagnosis::FindingKind::kTelemetryLoss) f = x;
  }
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->finding.metric, "records_lost_share");
  EXPECT_DOUBLE_EQ(f->finding.value, 647.0 / (647.0 + static_cast<double>(records_->all.size())));
  EXPECT_EQ(f->finding.severity, diagnosis::Severity::kWarning);  // ~1%
  ASSERT_EQ(report.windows.size(), 1u);
  const std::map<std::string, uint64_t> want = {{"late", 47}, {"socket", 600}};
  EXPECT_EQ(report.windows[0].records_lost, want);  // zero reasons left out
  auto s = tracker.BuildSnapshot();
  EXPECT_EQ(s->incomplete_windows, 1u);
}

// The same jobs in two windows a window length apart keep the tracker's ids: job_started
// findings in the first window only, two windows seen per job, the second window's steps appended
// to the first's, and every job reference of the second window's report renamed to those ids.
TEST_F(TrackerTest, JobsKeepTheirIdsAcrossWindows) {
  Tracker tracker(TrackerOptions{}, nullptr);
  auto started = [](const Store::WindowWrite& w) {
    return static_cast<size_t>(
        std::count_if(w.findings.begin(), w.findings.end(), [](const StoredFinding* f) {
          return f->finding.kind == diagnosis::FindingKind::kJobStarted;
        }));
  };
  auto ids = [](const Store::WindowWrite& w) {
    std::set<std::string> out;
    for (const JobState* j : w.jobs) out.insert(j->id);
    return out;
  };
  Store::WindowWrite first, second;
  output::Report r1, r2;
  ASSERT_TRUE(tracker.AnalyzeWindow(TheWindow(), *points_, WindowLoss{}, &first, &r1));
  const std::set<std::string> jobs = ids(first);
  ASSERT_FALSE(jobs.empty());
  EXPECT_EQ(started(first), jobs.size());
  const size_t first_steps = first.steps.size();
  EXPECT_GT(first_steps, 0u);

  ASSERT_TRUE(
      tracker.AnalyzeWindow(TheWindow(kMinute), *points_, WindowLoss{}, &second, &r2));
  EXPECT_EQ(started(second), 0u);
  EXPECT_EQ(ids(second), jobs);
  EXPECT_GT(second.steps.size(), 0u);
  for (const output::ReportJob& j : r2.jobs) EXPECT_TRUE(jobs.count(j.id)) << j.id;
  ASSERT_FALSE(r2.timelines.empty());
  for (const output::ReportTimeline& t : r2.timelines) EXPECT_TRUE(jobs.count(t.job)) << t.job;

  auto s = tracker.BuildSnapshot();
  ASSERT_EQ(s->jobs.size(), jobs.size());
  size_t steps = 0;
  for (const JobState& j : s->jobs) {
    EXPECT_TRUE(j.active);
    EXPECT_EQ(j.windows, 2u);
    steps += j.steps.size();
  }
  EXPECT_EQ(steps, first_steps + second.steps.size());
}

// Job ids come from the jobs, not from the order a tracker meets them: one tracker sees job A a
// window before job B, another B before A; both give each job the same id, the hash of its GPUs.
TEST_F(TrackerTest, JobIdsDoNotDependOnTheOrderJobsAreMet) {
  auto ids_by_gpus = [&](bool a_first) {
    Tracker t(TrackerOptions{}, nullptr);
    Store::WindowWrite w;
    EXPECT_TRUE(t.AnalyzeWindow(JobsWindow(0, a_first, !a_first), *points_, WindowLoss{}, &w));
    EXPECT_TRUE(t.AnalyzeWindow(JobsWindow(kMinute, true, true), *points_, WindowLoss{}, &w));
    std::map<std::vector<IpAddr>, std::string> out;
    const auto snapshot = t.BuildSnapshot();
    for (const JobState& j : snapshot->jobs) out[j.gpus] = j.id;
    return out;
  };
  const auto a_first = ids_by_gpus(true);
  const auto b_first = ids_by_gpus(false);
  ASSERT_EQ(a_first.size(), 16u);  // 8 in each copy
  EXPECT_EQ(a_first, b_first);
  for (const auto& [gpus, id] : a_first) EXPECT_EQ(id, StableJobId(gpus));
}

// What a shard's analyser gives: it sees only job B and is restarted from its database between
// two windows, yet job B and every finding about it have the ids, first windows and window
// counts of one tracker that saw both jobs throughout.
TEST_F(TrackerTest, AShardRestartedFromItsStoreGivesTheSameIdsAsOneTracker) {
  Tracker reference(TrackerOptions{}, nullptr);
  Store::WindowWrite w;
  for (const int64_t shift : {int64_t{0}, kMinute}) {
    ASSERT_TRUE(reference.AnalyzeWindow(JobsWindow(shift, true, true), *points_, WindowLoss{}, &w));
  }
  const std::string path = prism::testing::UniqueTempPath("prism_tracker_ids", ".sqlite");
  std::filesystem::remove(path);
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store) << store.error().message;
    Tracker shard(TrackerOptions{}, nullptr);
    ASSERT_TRUE(shard.AnalyzeWindow(JobsWindow(0, false, true), *points_, WindowLoss{}, &w));
    ASSERT_TRUE((*store)->Write(w));
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store) << store.error().message;
  auto loaded = (*store)->Load();
  ASSERT_TRUE(loaded) << loaded.error().message;
  Tracker restarted(TrackerOptions{}, nullptr);
  restarted.Restore(std::move(*loaded));
  ASSERT_TRUE(restarted.AnalyzeWindow(JobsWindow(kMinute, false, true), *points_, WindowLoss{}, &w));
  store->reset();
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(path + suffix);

  const auto want = reference.BuildSnapshot();
  const auto got = restarted.BuildSnapshot();
  std::map<std::vector<IpAddr>, std::string> want_ids;
  for (const JobState& j : want->jobs) want_ids[j.gpus] = j.id;
  ASSERT_EQ(got->jobs.size(), 8u);  // job B's
  std::set<std::string> job_b;
  for (const JobState& j : got->jobs) {
    EXPECT_EQ(j.windows, 2u);
    EXPECT_EQ(j.id, want_ids[j.gpus]);
    job_b.insert(j.id);
  }
  std::map<int64_t, const StoredFinding*> want_by_id;
  for (const StoredFinding& f : want->findings) want_by_id[f.id] = &f;
  size_t compared = 0;
  for (const StoredFinding& f : got->findings) {
    if (job_b.count(f.finding.job) == 0) continue;
    auto it = want_by_id.find(f.id);
    ASSERT_NE(it, want_by_id.end()) << diagnosis::FindingKindName(f.finding.kind) << " " << f.id;
    EXPECT_EQ(it->second->finding.kind, f.finding.kind);
    EXPECT_EQ(it->second->finding.job, f.finding.job);
    EXPECT_EQ(it->second->first_window_end_ns, f.first_window_end_ns);
    EXPECT_EQ(it->second->windows, f.windows);
    ++compared;
  }
  EXPECT_GE(compared, got->jobs.size());  // job_started at least
}

// Findings of one identity first reported by different windows are different findings with
// different ids; ids stay unique in the tracker, and the snapshot lists findings oldest first.
TEST_F(TrackerTest, FindingIdsAreUniqueAndListedByFirstWindow) {
  Tracker tracker(TrackerOptions{}, nullptr);
  Store::WindowWrite w;
  // Job A alone, then B alone two windows later (A ends), then A again (resumed): job_started
  // of each of A's jobs twice, from two windows.
  ASSERT_TRUE(tracker.AnalyzeWindow(JobsWindow(0, true, false), *points_, WindowLoss{}, &w));
  ASSERT_TRUE(tracker.AnalyzeWindow(JobsWindow(2 * kMinute, false, true), *points_, WindowLoss{}, &w));
  ASSERT_TRUE(tracker.AnalyzeWindow(JobsWindow(4 * kMinute, true, false), *points_, WindowLoss{}, &w));
  const auto s = tracker.BuildSnapshot();
  std::set<int64_t> ids;
  size_t a_started = 0;
  const std::string first_job = s->jobs.at(0).id;
  for (size_t i = 0; i < s->findings.size(); ++i) {
    const StoredFinding& f = s->findings[i];
    EXPECT_TRUE(ids.insert(f.id).second) << f.id;
    EXPECT_GE(f.id, int64_t{1} << 32);
    EXPECT_LT(f.id, int64_t{1} << 53);
    if (i > 0) {
      EXPECT_LE(s->findings[i - 1].first_window_end_ns, f.first_window_end_ns);
    }
    a_started += f.finding.kind == diagnosis::FindingKind::kJobStarted && f.finding.job == first_job;
  }
  EXPECT_EQ(a_started, 2u);
}

// The rules write the window's job id ("job0") into a finding's text; the tracker's id replaces
// it, so the text names the job the finding carries (Alertmanager's summary, the API, the
// dashboard). `slow-steps` has a straggler GPU: a slow_step finding about its job.
TEST(TrackerTexts, FindingTextsNameTheTrackersJobIds) {
  auto config = sim::MakeScenario("slow-steps", 1);
  ASSERT_TRUE(config);
  sim::Cluster cluster(config->fabric);
  Records records;
  PointTable points;
  ASSERT_TRUE(sim::Simulate(*config, cluster, &records, &points));
  const Topology topology = cluster.MakeTopology();
  WindowBufferOptions windows;  // as e2e_serve_roles analyses this scenario
  windows.window_ns = 20'000'000'000;
  windows.step_ns = 5'000'000'000;
  WindowBuffer buffer(windows);
  for (const FlowRecord& r : records.all) buffer.Add(r);
  buffer.Flush();
  TrackerOptions options;
  options.window_ns = windows.window_ns;
  options.step_ns = windows.step_ns;
  Tracker tracker(options, &topology);
  Store::WindowWrite w;
  for (Window window; buffer.TakeDue(&window);) {
    ASSERT_TRUE(tracker.AnalyzeWindow(std::move(window), points, WindowLoss{}, &w));
  }
  const std::regex window_id(R"(\bjob[0-9]+\b)");
  size_t named = 0;
  const auto snapshot = tracker.BuildSnapshot();
  for (const StoredFinding& f : snapshot->findings) {
    EXPECT_FALSE(std::regex_search(f.finding.summary, window_id)) << f.finding.summary;
    if (f.finding.kind == diagnosis::FindingKind::kSlowStep) {
      EXPECT_EQ(f.finding.summary.rfind(f.finding.job + ":", 0), 0u) << f.finding.summary;
      ++named;
    }
  }
  EXPECT_GE(named, 1u);
}

}  // namespace
}  // namespace prism::service
