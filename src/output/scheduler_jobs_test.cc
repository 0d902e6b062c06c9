#include "output/scheduler_jobs.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace prism::output {
namespace {

IpAddr Ip(const std::string& s) { return *IpAddr::Parse(s); }

// A job of `n` GPUs 10.0.<third>.1..n on hosts "h<third>-<k>" of 4 GPUs each.
ReportJob Job(const std::string& id, int third, int n) {
  ReportJob j;
  j.id = id;
  for (int i = 1; i <= n; ++i) {
    const IpAddr ip = Ip(fmt::format("10.0.{}.{}", third, i));
    j.gpus.push_back(ip);
    j.host_of[ip] = fmt::format("h{}-{}.cluster.example", third, (i - 1) / 4);
  }
  return j;
}

io::JobsMap Map(const std::string& text) {
  auto m = io::ReadJobsMapBuffer(text, "map", nullptr);
  EXPECT_TRUE(m) << m.error().message;
  return m ? *m : io::JobsMap();
}

Report TwoJobs() {
  Report r;
  r.windows.push_back({});
  r.windows.back().start_ns = 100;
  r.windows.back().end_ns = 200;
  r.jobs = {Job("job0", 1, 8), Job("job1", 2, 8)};
  ReportFinding f;
  f.kind = diagnosis::FindingKind::kStragglerGpu;
  f.job = "job1";
  f.gpus = {Ip("10.0.2.3")};
  r.findings.push_back(f);
  return r;
}

TEST(SchedulerJobsTest, NamesJobsByHostShortNameOrAddress) {
  Report r = TwoJobs();
  // job0 by short host names (the topology's are fully qualified), job1 by address.
  const io::JobsMap map =
      Map("7001|alice|llama|h1-[0-1]\n"
          "host_or_ip,job_id,user,name\n"
          "10.0.2.[1-8],502,bob,eval\n");
  const SchedulerMatch m = ApplySchedulerJobs(map, &r);
  EXPECT_EQ(m.jobs_named, 2u);
  EXPECT_EQ(m.mismatches, 0u);
  EXPECT_EQ(r.jobs[0].scheduler, (SchedulerRef{"7001", "alice", "llama"}));
  EXPECT_EQ(r.jobs[1].scheduler, (SchedulerRef{"502", "bob", "eval"}));
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].scheduler.job_id, "502");  // its job's
  EXPECT_EQ(r.findings[0].scheduler.user, "bob");
}

TEST(SchedulerJobsTest, RecognisedJobSpanningTwoSchedulerJobsIsAWarning) {
  Report r = TwoJobs();
  // job0's first host in 7001, its second in 7002.
  const io::JobsMap map =
      Map("7001|alice|llama|h1-0\n"
          "7002|carol|other|h1-1\n"
          "7003|bob|eval|h2-[0-1]\n");
  const SchedulerMatch m = ApplySchedulerJobs(map, &r);
  EXPECT_EQ(m.mismatches, 1u);
  const ReportFinding& f = r.findings.back();
  EXPECT_EQ(f.kind, diagnosis::FindingKind::kSchedulerMismatch);
  EXPECT_EQ(f.severity, diagnosis::Severity::kWarning);
  EXPECT_EQ(f.job, "job0");
  EXPECT_EQ(f.scheduler.job_id, "7001");  // 4 GPUs each: the first in the map wins the tie
  EXPECT_EQ(f.gpus.size(), 4u);           // those outside its own scheduler job
  EXPECT_EQ(f.gpus.front(), Ip("10.0.1.5"));
  EXPECT_EQ(f.start_ns, 100);
  EXPECT_EQ(f.end_ns, 200);
  EXPECT_NE(f.summary.find("7001 (alice, llama)"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("7002 (carol, other) (4 GPUs)"), std::string::npos) << f.summary;
}

TEST(SchedulerJobsTest, SchedulerJobSplitIntoTwoRecognisedJobsIsInfo) {
  Report r = TwoJobs();
  const io::JobsMap map = Map("9001|dave|big|h1-[0-1],h2-[0-1]\n");
  const SchedulerMatch m = ApplySchedulerJobs(map, &r);
  EXPECT_EQ(m.jobs_named, 2u);
  ASSERT_EQ(m.mismatches, 1u);
  const ReportFinding& f = r.findings.back();
  EXPECT_EQ(f.kind, diagnosis::FindingKind::kSchedulerMismatch);
  EXPECT_EQ(f.severity, diagnosis::Severity::kInfo);
  EXPECT_EQ(f.scheduler.job_id, "9001");
  EXPECT_NE(f.summary.find("split into 2 recognised jobs: job0 (8 GPUs), job1 (8 GPUs)"),
            std::string::npos)
      << f.summary;
}

TEST(SchedulerJobsTest, SharedNodeIsNoMismatchAndUnknownGpusAreNoJob) {
  Report r = TwoJobs();
  // 7001 and 7002 share h1-1; job0 lies wholly in 7001. job1's hosts are in no scheduler job.
  const io::JobsMap map =
      Map("7001|alice|llama|h1-[0-1]\n"
          "7002|carol|small|h1-1\n");
  const SchedulerMatch m = ApplySchedulerJobs(map, &r);
  EXPECT_EQ(m.mismatches, 0u);
  EXPECT_EQ(m.jobs_named, 1u);
  EXPECT_EQ(m.jobs_unmatched, 1u);
  EXPECT_EQ(r.jobs[0].scheduler.job_id, "7001");
  EXPECT_TRUE(r.jobs[1].scheduler.empty());
  EXPECT_TRUE(r.findings[0].scheduler.empty());
}

}  // namespace
}  // namespace prism::output
