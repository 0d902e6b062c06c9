#include "io/jobs_map.h"

#include <gtest/gtest.h>

namespace prism::io {
namespace {

using Hosts = std::vector<std::string>;

TEST(SlurmHostListTest, ExpandsAsSlurmWritesThem) {
  auto h = ExpandSlurmHostList("gpu[001-004,007]");
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(*h, (Hosts{"gpu001", "gpu002", "gpu003", "gpu004", "gpu007"}));
  h = ExpandSlurmHostList("node[1-3]");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, (Hosts{"node1", "node2", "node3"}));
  h = ExpandSlurmHostList("gpu[001-002],node[9-11],login");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, (Hosts{"gpu001", "gpu002", "node9", "node10", "node11", "login"}));
  h = ExpandSlurmHostList("rack[1-2]-n[08-09]");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, (Hosts{"rack1-n08", "rack1-n09", "rack2-n08", "rack2-n09"}));
  h = ExpandSlurmHostList("10.0.0.1");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, (Hosts{"10.0.0.1"}));
  h = ExpandSlurmHostList("a[7]");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, (Hosts{"a7"}));
}

TEST(SlurmHostListTest, RefusesMalformedLists) {
  for (const char* bad : {"gpu[001-004", "gpu001-004]", "gpu[4-1]", "gpu[a-b]", "gpu[]",
                          "gpu[1-[2]]", "a,,b", "", "gpu[1-2,]", "n[0-99999999]"}) {
    auto h = ExpandSlurmHostList(bad);
    EXPECT_FALSE(h) << "'" << bad << "' gave " << (h ? h->size() : 0) << " hosts";
  }
  EXPECT_NE(ExpandSlurmHostList("gpu[4-1]").error().message.find("backwards"), std::string::npos);
  EXPECT_NE(ExpandSlurmHostList("gpu[1-2").error().message.find("without ']'"), std::string::npos);
}

TEST(JobsMapTest, ReadsCsvAndSqueueLines) {
  Stats stats;
  auto m = ReadJobsMapBuffer(
      "# scheduler jobs\n"
      "host_or_ip,job_id,user,name\n"
      "10.0.0.1,501,alice,llama-70b\n"
      "10.0.0.2,501,alice,llama-70b\n"
      "host03,502,bob,\n"
      "\n"
      "JOBID|USER|NAME|NODELIST\n"
      "7001|carol|pretrain|gpu[001-002],node[1-2]\n"
      "7002|dave|eval|a|b|node2\n"
      "7003|erin|queued|\n",
      "map.txt", &stats);
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->jobs.size(), 4u);
  EXPECT_EQ(m->jobs[0].id, "501");
  EXPECT_EQ(m->jobs[0].user, "alice");
  EXPECT_EQ(m->jobs[0].name, "llama-70b");
  EXPECT_EQ(m->jobs[1].name, "");
  EXPECT_EQ(m->jobs[3].name, "eval|a|b");  // a job name may hold '|'
  EXPECT_EQ(m->by_host.at("10.0.0.2"), (std::vector<size_t>{0}));
  EXPECT_EQ(m->by_host.at("host03"), (std::vector<size_t>{1}));
  EXPECT_EQ(m->by_host.at("gpu002"), (std::vector<size_t>{2}));
  EXPECT_EQ(m->by_host.at("node1"), (std::vector<size_t>{2}));
  EXPECT_EQ(m->by_host.at("node2"), (std::vector<size_t>{2, 3}));  // a shared node
  EXPECT_EQ(m->lines, 5u);
  EXPECT_EQ(m->pending_lines, 1u);
  EXPECT_EQ(m->bad_lines, 0u);
  EXPECT_EQ(stats.Get(Stat::jobs_map_bad_line), 0u);
}

TEST(JobsMapTest, BadLinesAreCountedAndSkipped) {
  Stats stats;
  testing::internal::CaptureStderr();
  auto m = ReadJobsMapBuffer(
      "host_or_ip,job_id,user,name\n"
      "10.0.0.1,501,alice,llama\n"
      "10.0.0.2,501\n"                  // too few fields
      "10.0.0.3,,alice,llama\n"         // empty job id
      "gpu[3-1],502,bob,x\n"            // reversed range
      "8001|frank|train|gpu[001-002\n"  // unbalanced
      "8002|only-two\n",                // too few '|'
      "map.csv", &stats);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->jobs.size(), 1u);
  EXPECT_EQ(m->bad_lines, 5u);
  EXPECT_EQ(stats.Get(Stat::jobs_map_bad_line), 5u);
  EXPECT_NE(err.find("map.csv:3: expected host_or_ip,job_id,user,name"), std::string::npos) << err;
  EXPECT_NE(err.find("map.csv:5: bad host_or_ip: range '3-1'"), std::string::npos) << err;
  EXPECT_NE(err.find("map.csv:6: bad NODELIST: '[' without ']'"), std::string::npos) << err;
}

TEST(JobsMapTest, NothingUsableIsAnError) {
  testing::internal::CaptureStderr();
  auto m = ReadJobsMapBuffer("# nothing\nhost_or_ip,job_id,user,name\nx,y\n", "empty.csv", nullptr);
  testing::internal::GetCapturedStderr();
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ErrorCode::kDataLoss);
  EXPECT_NE(m.error().message.find("empty.csv: no usable line (1 bad"), std::string::npos)
      << m.error().message;
  EXPECT_FALSE(ReadJobsMap("/nonexistent/map.csv", nullptr));
}

}  // namespace
}  // namespace prism::io
