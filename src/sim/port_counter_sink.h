// File: sim/port_counter_sink.h
// Counters mode (docs/counters.md), simulator side: what a switch's port counters would have shown
// during a simulated run. A FlowSink on the simulator's records adds each transfer's bytes, spread
// evenly over its duration, to the leaf port of its source NIC ("in": server -> switch) and of its
// destination NIC ("out"); Poll() then reads every port the way a collector does: a counter the
// switch refreshes every `refresh_s` (random phase per port), polled every `poll_s` with jitter,
// written as deltas. So `llmprism simulate --emit counters --poll S --refresh R` measures analysis
// against truth.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/flow_record.h"
#include "counters/port_counters.h"
#include "sim/cluster.h"

namespace prism::sim {

struct PollOptions {
  double poll_s = 1;
  double refresh_s = 1;        // 0: the counter is exact at every poll
  double poll_jitter = 0.1;    // relative sigma of each poll interval
  uint64_t seed = 1;
};

class PortCounterSink : public FlowSink {
 public:
  // Bytes are binned at resolution_s over [start_ns, end_ns).
  PortCounterSink(const Cluster* cluster, int64_t start_ns, int64_t end_ns,
                  double resolution_s = 0.01);
  void OnRecord(const FlowRecord& r) override;

  counters::CountersData Poll(const PollOptions& options) const;
  // The same polls as Poll() (same times and values for the same options), as the cumulative
  // counters a collector reads: `on_poll(endpoint, ts_ns, in_bytes, out_bytes)` per poll, port by
  // port in endpoint order, each port's polls in time order. The sFlow output exports these as
  // counter samples (sim/sflow_emitter.h).
  using PollCallback = std::function<void(int endpoint, int64_t ts_ns, uint64_t in_bytes,
                                          uint64_t out_bytes)>;
  void PollCumulative(const PollOptions& options, const PollCallback& on_poll) const;
  // switch,port -> host, NIC address, NIC name for every GPU NIC.
  counters::PortTopology Topology() const;
  // The same with the ports named by `port_of(endpoint)` = (switch, port).
  using PortNamer = std::function<std::pair<std::string, std::string>(int endpoint)>;
  counters::PortTopology Topology(const PortNamer& port_of) const;
  uint64_t bytes() const { return bytes_; }

 private:
  const Cluster* cluster_;
  int64_t start_ns_, end_ns_;
  double res_ns_;
  size_t bins_;
  std::unordered_map<IpAddr, int, IpAddrHash> endpoint_of_;
  std::vector<std::vector<float>> in_, out_;  // per GPU endpoint, bytes per bin
  uint64_t bytes_ = 0;
};

}  // namespace prism::sim
