#include "ingest/sflow/loss_tracker.h"

namespace prism::ingest {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xD6E8FEB86659FD93ull;
}

}  // namespace

SflowLossTracker::Gap SflowLossTracker::ObserveDatagram(const IpAddr& agent, uint32_t sub_agent,
                                                        uint32_t sequence) {
  // Datagram and sample streams share the map; the leading word keeps their keys apart.
  const uint64_t key = Mix(Mix(1, IpAddrHash()(agent)), sub_agent);
  return Observe(key, sequence, 0);
}

SflowLossTracker::Gap SflowLossTracker::ObserveFlowSample(const IpAddr& agent, uint32_t sub_agent,
                                                          uint32_t source_type,
                                                          uint32_t source_index,
                                                          uint32_t sequence, uint32_t drops) {
  const uint64_t key =
      Mix(Mix(Mix(Mix(2, IpAddrHash()(agent)), sub_agent), source_type), source_index);
  return Observe(key, sequence, drops);
}

SflowLossTracker::Gap SflowLossTracker::Observe(uint64_t key, uint32_t sequence, uint32_t drops) {
  Gap gap;
  auto it = streams_.find(key);
  if (it == streams_.end()) {
    if (streams_.size() < max_streams_) streams_.emplace(key, State{sequence, drops});
    return gap;
  }
  State& s = it->second;
  // Unsigned differences: numbers wrap at 2^32. Half the space ahead is "ahead", the rest behind.
  const uint32_t ahead = sequence - s.sequence;
  if (ahead == 0 || ahead >= 0x80000000u) {
    gap.went_back = true;
  } else {
    gap.lost = ahead - 1;
    const uint32_t more_drops = drops - s.drops;
    if (more_drops < 0x80000000u) gap.dropped = more_drops;
  }
  s = State{sequence, drops};
  return gap;
}

}  // namespace prism::ingest
