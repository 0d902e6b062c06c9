#include "ingest/sflow/loss_tracker.h"

#include <gtest/gtest.h>

namespace prism::ingest {
namespace {

TEST(SflowLossTracker, DatagramGapsPerAgentAndSubAgent) {
  SflowLossTracker t;
  const IpAddr a = IpAddr::FromV4(1), b = IpAddr::FromV4(2);
  EXPECT_EQ(t.ObserveDatagram(a, 0, 10).lost, 0u);  // baseline
  EXPECT_EQ(t.ObserveDatagram(a, 0, 11).lost, 0u);
  EXPECT_EQ(t.ObserveDatagram(a, 0, 14).lost, 2u);  // 12, 13 missing
  EXPECT_EQ(t.ObserveDatagram(b, 0, 500).lost, 0u);  // another agent: its own baseline
  EXPECT_EQ(t.ObserveDatagram(a, 1, 1).lost, 0u);    // another sub-agent too
  EXPECT_EQ(t.ObserveDatagram(a, 1, 2).lost, 0u);
  const SflowLossTracker::Gap restart = t.ObserveDatagram(a, 0, 1);
  EXPECT_TRUE(restart.went_back);
  EXPECT_EQ(restart.lost, 0u);
  EXPECT_EQ(t.ObserveDatagram(a, 0, 2).lost, 0u);  // counted again from the restart
}

TEST(SflowLossTracker, SampleGapsAndDropsWrapAt32Bits) {
  SflowLossTracker t;
  const IpAddr a = IpAddr::FromV4(1);
  EXPECT_EQ(t.ObserveFlowSample(a, 0, 0, 5, 0xFFFFFFFEu, 100).lost, 0u);
  SflowLossTracker::Gap g = t.ObserveFlowSample(a, 0, 0, 5, 1, 103);  // FFFFFFFF, 0 missing
  EXPECT_EQ(g.lost, 2u);
  EXPECT_EQ(g.dropped, 3u);
  EXPECT_FALSE(g.went_back);
  EXPECT_EQ(t.ObserveFlowSample(a, 0, 0, 6, 1, 0).lost, 0u);  // another source
  g = t.ObserveFlowSample(a, 0, 0, 5, 1, 103);  // a repeat: not loss
  EXPECT_TRUE(g.went_back);
  EXPECT_EQ(g.dropped, 0u);
}

TEST(SflowLossTracker, StreamsAreBounded) {
  SflowLossTracker t(/*max_streams=*/2);
  for (uint32_t agent = 1; agent <= 3; ++agent) t.ObserveDatagram(IpAddr::FromV4(agent), 0, 1);
  // The third agent was not followed: a jump there is not (cannot be) counted.
  EXPECT_EQ(t.ObserveDatagram(IpAddr::FromV4(3), 0, 9).lost, 0u);
  EXPECT_EQ(t.ObserveDatagram(IpAddr::FromV4(1), 0, 9).lost, 7u);
}

}  // namespace
}  // namespace prism::ingest
