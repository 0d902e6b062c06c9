#include "io/topology_csv.h"
#include "testing/temp_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace prism::io {
namespace {

using ::testing::HasSubstr;

IpAddr Ip(const char* s) { return *IpAddr::Parse(s); }

TEST(TopologyCsv, ParsesKindsDefaultsAndColumnOrder) {
  const std::string csv =
      "leaf,ip,rack,host,gpu,kind\n"
      "leaf1,10.0.0.1,r1,node1,0,gpu\n"
      "leaf1,10.0.0.2,r1,node1,1,\n"
      "leaf2,10.0.9.1,r2,store1,,storage\n"
      "leaf2,fd00::9,r2,mgmt,-1,other\n";
  Stats stats;
  auto topo = ReadTopologyCsvBuffer(csv, "topo.csv", &stats);
  ASSERT_TRUE(topo.has_value()) << topo.error().message;
  ASSERT_EQ(topo->entries().size(), 4u);
  const EndpointInfo* a = topo->Find(Ip("10.0.0.2"));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->host, "node1");
  EXPECT_EQ(a->gpu, 1);
  EXPECT_EQ(a->leaf, "leaf1");
  EXPECT_EQ(a->kind, EndpointKind::kGpu);
  const EndpointInfo* s = topo->Find(Ip("10.0.9.1"));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kind, EndpointKind::kStorage);
  EXPECT_EQ(s->gpu, -1);
  const EndpointInfo* o = topo->Find(Ip("fd00::9"));
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->kind, EndpointKind::kOther);
  EXPECT_EQ(stats.SkippedTotal(), 0u);
}

TEST(TopologyCsv, KindColumnIsOptional) {
  auto topo = ReadTopologyCsvBuffer("ip,host,gpu,leaf\n10.0.0.1,h,3,l\n", "t.csv", nullptr);
  ASSERT_TRUE(topo.has_value()) << topo.error().message;
  EXPECT_EQ(topo->entries()[0].kind, EndpointKind::kGpu);
  EXPECT_EQ(topo->entries()[0].gpu, 3);
}

TEST(TopologyCsv, BadRowsAndDuplicatesAreCountedAndDescribed) {
  const std::string csv =
      "ip,host,gpu,leaf,kind\n"
      "10.0.0.1,node1,0,leaf1,gpu\n"    // 2 ok
      "10.0.0.1,node9,0,leaf1,gpu\n"    // 3 duplicate
      "10.0.0.x,node1,1,leaf1,gpu\n"    // 4 bad ip
      "10.0.0.3,node1,one,leaf1,gpu\n"  // 5 bad gpu
      "10.0.0.4,node1,2,leaf1,tpu\n"    // 6 bad kind
      "10.0.0.5,node1,2,leaf1\n"        // 7 field count
      "10.0.0.6,,2,leaf1,gpu\n"         // 8 empty host
      "10.0.0.7,node2,0,leaf2,gpu\n";   // 9 ok
  Stats stats;
  ::testing::internal::CaptureStderr();
  auto topo = ReadTopologyCsvBuffer(csv, "topo.csv", &stats);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(topo.has_value()) << topo.error().message;
  EXPECT_EQ(topo->entries().size(), 2u);
  EXPECT_EQ(topo->Find(Ip("10.0.0.1"))->host, "node1");  // first row wins
  EXPECT_EQ(stats.Get(Stat::topology_duplicate_ip), 1u);
  EXPECT_EQ(stats.Get(Stat::topology_bad_row), 5u);
  EXPECT_THAT(err, HasSubstr("topo.csv:3: expected each ip once, got 10.0.0.1 again"));
  EXPECT_THAT(err, HasSubstr("topo.csv:4: expected an IPv4 or IPv6 address in column ip, got "
                             "'10.0.0.x'"));
  EXPECT_THAT(err, HasSubstr("topo.csv:5: expected a GPU index"));
  EXPECT_THAT(err, HasSubstr("topo.csv:6: expected kind gpu, storage or other, got 'tpu'"));
  EXPECT_THAT(err, HasSubstr("topo.csv:7: expected 5 fields as in the header, got 4"));
  EXPECT_THAT(err, HasSubstr("topo.csv: 1 more problems not shown"));
}

TEST(TopologyCsv, UnusableInputsAreErrors) {
  auto missing = ReadTopologyCsvBuffer("ip,host,leaf\n10.0.0.1,h,l\n", "t.csv", nullptr);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kDataLoss);
  EXPECT_THAT(missing.error().message, HasSubstr("t.csv:1"));
  EXPECT_THAT(missing.error().message, HasSubstr("'gpu'"));

  auto empty = ReadTopologyCsvBuffer("", "e.csv", nullptr);
  ASSERT_FALSE(empty.has_value());
  EXPECT_THAT(empty.error().message, HasSubstr("e.csv"));

  ::testing::internal::CaptureStderr();
  auto none = ReadTopologyCsvBuffer("ip,host,gpu,leaf\nbad,h,0,l\n", "n.csv", nullptr);
  ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, ErrorCode::kDataLoss);

  auto nofile = ReadTopologyCsv("/nonexistent/topology.csv", nullptr);
  ASSERT_FALSE(nofile.has_value());
  EXPECT_EQ(nofile.error().code, ErrorCode::kNotFound);
}

TEST(TopologyCsv, WriteThenReadFromFileRoundTrips) {
  Topology topo;
  topo.Add({Ip("10.0.0.1"), "node1", 0, "leaf1", EndpointKind::kGpu});
  topo.Add({Ip("10.0.0.2"), "node1", 7, "leaf1", EndpointKind::kGpu});
  topo.Add({Ip("fd00::5"), "store", -1, "leaf2", EndpointKind::kStorage});
  topo.Add({Ip("10.0.0.9"), "mgmt", -1, "", EndpointKind::kOther});
  std::ostringstream out;
  ASSERT_TRUE(WriteTopologyCsv(topo, &out).has_value());
  EXPECT_EQ(out.str(),
            "ip,host,gpu,leaf,kind\n"
            "10.0.0.1,node1,0,leaf1,gpu\n"
            "10.0.0.2,node1,7,leaf1,gpu\n"
            "fd00::5,store,,leaf2,storage\n"
            "10.0.0.9,mgmt,,,other\n");
  std::string path = prism::testing::UniqueTempPath("topology_rt", ".csv");
  {
    std::ofstream f(path);
    f << out.str();
  }
  auto back = ReadTopologyCsv(path, nullptr);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  ASSERT_EQ(back->entries().size(), topo.entries().size());
  for (size_t i = 0; i < topo.entries().size(); ++i) {
    const auto& a = topo.entries()[i];
    const auto& b = back->entries()[i];
    EXPECT_EQ(a.ip, b.ip);
    EXPECT_EQ(a.host, b.host);
    EXPECT_EQ(a.gpu, b.gpu);
    EXPECT_EQ(a.leaf, b.leaf);
    EXPECT_EQ(a.kind, b.kind);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace prism::io
