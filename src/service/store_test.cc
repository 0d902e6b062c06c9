#include "service/store.h"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace prism::service {
namespace {

TEST(Store, WritesAndReadsBackAcrossReopen) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("prism_store_test_" + std::to_string(getpid()) + ".sqlite")).string();
  std::filesystem::remove(path);
  JobState job;
  job.id = "job3";
  job.gpus = {*IpAddr::Parse("10.0.0.1"), *IpAddr::Parse("10.0.0.2")};
  job.hosts = {"h1"};
  job.layout.dp = 2;
  job.layout.pp = 1;
  job.layout.tp = 1;
  job.layout.consistent = true;
  job.layout.stages = {job.gpus};
  job.first_seen_ns = 10;
  job.last_seen_ns = 20;
  StoredFinding f;
  f.id = 7;
  f.finding.kind = "straggler_gpu";
  f.finding.severity = diagnosis::Severity::kCritical;
  f.finding.job = "job3";
  f.finding.gpus = {job.gpus[1]};
  f.finding.start_ns = 100;
  f.finding.end_ns = 200;
  f.finding.summary = "slow";
  f.windows = 3;
  diagnosis::BaselineStore baselines{{"10.0.0.1", {1.5, 0.1, 30}}};
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store) << store.error().message;
    Store::WindowWrite w;
    w.jobs = {&job};
    w.steps = {{"job3", {100, 200, 0.1}}, {"job3", {200, 300, 0.1}}};
    w.findings = {&f};
    w.baselines = &baselines;
    w.next_job_number = 4;
    ASSERT_TRUE((*store)->Write(w));
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store);
  auto loaded = (*store)->Load();
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->jobs.size(), 1u);
  EXPECT_EQ(loaded->jobs[0].id, "job3");
  EXPECT_EQ(loaded->jobs[0].gpus, job.gpus);
  EXPECT_EQ(loaded->jobs[0].layout.stages, job.layout.stages);
  EXPECT_EQ(loaded->jobs[0].steps.size(), 2u);
  ASSERT_EQ(loaded->findings.size(), 1u);
  EXPECT_EQ(loaded->findings[0].id, 7);
  EXPECT_EQ(loaded->findings[0].finding.severity, diagnosis::Severity::kCritical);
  EXPECT_EQ(loaded->findings[0].finding.gpus, f.finding.gpus);
  EXPECT_EQ(loaded->findings[0].windows, 3);
  EXPECT_EQ(loaded->next_job_number, 4);
  EXPECT_DOUBLE_EQ(loaded->baselines.at("10.0.0.1").median, 1.5);
  store->reset();
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
}

}  // namespace
}  // namespace prism::service
