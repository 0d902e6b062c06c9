#include "sim/network.h"

#include <gtest/gtest.h>

namespace prism::sim {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kSec = 1'000'000'000;

// Two pods of 4 hosts, 2 spines: GPU 0 of hosts 0-3 (pod 0, rail 0) send to GPU 0 of hosts 4-7
// (pod 1, rail 0) on QPs that ECMP puts on one spine.
struct Fabric {
  Fabric() : cluster(Config()), net(&cluster) { net.set_congestion_log(&log); }
  static FabricConfig Config() {
    FabricConfig c;
    c.hosts = 8;
    c.hosts_per_pod = 4;
    c.spines = 2;
    return c;
  }
  // A QP from src to dst routed through spine `spine`.
  uint32_t QpVia(int src, int dst, int spine) const {
    for (uint32_t qp = 1;; ++qp) {
      if (cluster.RouteFor(src, dst, qp).spine == cluster.SpineSwitch(spine)) return qp;
    }
  }
  Cluster cluster;
  Network net;
  CongestionLog log;
};

// Every second for 4 s, `senders` transfers of 100 MB start at once through one spine into one
// leaf: four of them share its downlink, the fabric congests itself and the log says where.
TEST(Network, TransfersPiledOnOneLinkAreLoggedAsTheFabricsOwnCongestion) {
  Fabric f;
  for (int s = 0; s < 4; ++s) {
    for (int second_group = 0; second_group < 2; ++second_group) {
      std::vector<TransferRequest> group;
      for (int h = 0; h < 4; ++h) {
        const int src = h * 8, dst = (4 + h) * 8;
        group.push_back({src, dst, f.QpVia(src, dst, 0), kT0 + s * kSec + second_group, 100 << 20});
      }
      f.net.Place(group);
    }
  }
  const std::vector<CongestionEvent> events = f.log.Events();
  ASSERT_FALSE(events.empty());
  bool downlink = false;
  for (const CongestionEvent& e : events) {
    EXPECT_EQ(e.spine, f.cluster.SpineSwitch(0));
    if (!e.up && e.leaf == f.cluster.LeafOf(4 * 8)) {
      downlink = true;
      EXPECT_EQ(e.start_ns, kT0);
      EXPECT_EQ(e.end_ns, kT0 + 4 * kSec);
    }
  }
  EXPECT_TRUE(downlink);
}

// The same transfers spread over both spines, one at a time: no link is squeezed.
TEST(Network, TransfersThatFitLeaveNoEvent) {
  Fabric f;
  for (int s = 0; s < 4; ++s) {
    for (int h = 0; h < 4; ++h) {
      const int src = h * 8, dst = (4 + h) * 8;
      f.net.Place({{src, dst, f.QpVia(src, dst, h % 2), kT0 + s * kSec + h * 200'000'000,
                    10 << 20}});
    }
  }
  EXPECT_TRUE(f.log.Events().empty());
}

}  // namespace
}  // namespace prism::sim
