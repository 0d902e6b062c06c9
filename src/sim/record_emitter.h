// File: sim/record_emitter.h
// Turns simulated transfers into the flow records a switch-side collector would produce: the
// record is observed at the transfer's spine (or its leaf when both ends share one), shifted by
// that switch's clock offset, split by the exporter's active timeout, and lost with probability p.
// Keeps what the truth needs from the records: which GPU pairs were seen, and which jobs crossed a
// faulty switch or link.
#pragma once

#include <cstdint>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "sim/cluster.h"
#include "sim/network.h"
#include "sim/sim_config.h"
#include "sim/sim_flow.h"

namespace prism::sim {

class RecordEmitter : public SimFlowSink {
 public:
  RecordEmitter(const Cluster* cluster, const Network* network, const NoiseConfig& noise,
                uint64_t seed, int64_t window_start_ns, int64_t window_end_ns, FlowSink* out,
                PointTable* points);

  void Emit(const SimFlow& flow) override;
  void WatchFault(const CapacityFault& fault) {
    watched_.push_back(fault);
    touched_.emplace_back();
  }

  uint64_t records() const { return records_; }
  uint64_t lost() const { return lost_; }
  // Unordered GPU pair (lower endpoint first) -> true when DP, false when PP.
  const std::unordered_map<uint64_t, bool>& pairs() const { return pairs_; }
  // Jobs whose data flows crossed watched fault i while it was active.
  const std::set<int>& JobsTouching(size_t fault) const { return touched_[fault]; }

 private:
  void Write(const SimFlow& flow, int64_t start_ns, int64_t end_ns, uint64_t bytes);

  const Cluster* cluster_;
  const Network* network_;
  NoiseConfig noise_;
  std::mt19937_64 rng_;
  int64_t window_start_ns_, window_end_ns_;
  FlowSink* out_;
  std::vector<PointId> point_of_switch_;
  std::vector<int64_t> skew_ns_;  // per switch
  std::vector<CapacityFault> watched_;
  std::vector<std::set<int>> touched_;
  std::unordered_map<uint64_t, bool> pairs_;
  uint64_t records_ = 0, lost_ = 0;
};

}  // namespace prism::sim
