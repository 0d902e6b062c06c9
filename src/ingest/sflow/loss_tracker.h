// File: ingest/sflow/loss_tracker.h
// Loss on the way from sFlow agents to llmprism, from the numbers the agents put in every
// datagram and sample (sFlow v5 section 4):
//   - a datagram's sequence number counts the datagrams its (agent, sub-agent) sent; a jump
//     ahead means datagrams lost in the network or at a full socket;
//   - a flow sample's sequence number counts the flow samples its source (an interface, a VLAN)
//     generated; a jump ahead means samples that never arrived, whichever datagrams carried them;
//   - a flow sample's `drops` counts the samples its source discarded for lack of resources
//     before export: samples that were taken but never sent.
// The first number seen per stream is the baseline (nothing before it is counted); a number
// behind the previous one is an agent restart or a reordered datagram: not loss, the stream starts
// afresh from it. Streams are bounded (max_streams); beyond it new ones are not followed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "core/ip_addr.h"

namespace prism::ingest {

class SflowLossTracker {
 public:
  explicit SflowLossTracker(size_t max_streams = 65536) : max_streams_(max_streams) {}

  struct Gap {
    uint64_t lost = 0;       // datagrams (or samples) numbered between this one and the last
    uint64_t dropped = 0;    // flow samples only: growth of the agent's drops counter
    bool went_back = false;  // numbered behind (or equal to) the previous one
  };

  Gap ObserveDatagram(const IpAddr& agent, uint32_t sub_agent, uint32_t sequence);
  Gap ObserveFlowSample(const IpAddr& agent, uint32_t sub_agent, uint32_t source_type,
                        uint32_t source_index, uint32_t sequence, uint32_t drops);

 private:
  struct State {
    uint32_t sequence = 0;
    uint32_t drops = 0;
  };
  Gap Observe(uint64_t key, uint32_t sequence, uint32_t drops);

  size_t max_streams_;
  std::unordered_map<uint64_t, State> streams_;
};

}  // namespace prism::ingest
