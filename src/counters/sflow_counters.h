// File: counters/sflow_counters.h
// Counters mode, input stage for sFlow: the generic interface counters (counter format 1) of sFlow
// v5 counter samples become port series (port_counters.h). Each (agent, ifIndex) is a port: the
// switch is the agent's address as text (as flow samples name their observation point), the port
// the ifIndex in decimal, so a port topology CSV maps "192.0.2.1,7" to a server. A poll is timed
// by its datagram's capture time, as the decoder times flow samples (ingest/sflow/sflow_decoder.h:
// the agent's uptime only orders an agent's own datagrams). ifInOctets -> in_bytes (from the
// server), ifOutOctets -> out_bytes. The octets are cumulative 64-bit counters in format 1, but an
// agent that only has the 32-bit ifInOctets/ifOutOctets exports those, which wrap at 2^32:
// CumulativeToDelta recovers both wraps (counters_wrap) and takes a restarted agent's counters as
// a reset (counters_reset). Used by `llmprism analyze --sflow-counters CAPTURE...`.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "core/ip_addr.h"
#include "core/stats.h"
#include "core/status.h"
#include "counters/port_counters.h"
#include "ingest/sflow/sflow_decoder.h"

namespace prism::counters {

// The port name of an sFlow interface: its ifIndex in decimal.
std::string SflowPortName(uint32_t if_index);

// Collects the polls of any number of agents, in any order.
class SflowCountersBuilder {
 public:
  explicit SflowCountersBuilder(Stats* stats) : builder_(CounterKind::kCumulative, stats) {}
  void Add(const ingest::SflowInterfacePoll& poll);
  // Deltas per port, sorted by (switch, port); counts counters_rows.
  CountersData Finish() { return builder_.Finish(); }
  uint64_t polls() const { return polls_; }

 private:
  CountersBuilder builder_;
  std::unordered_map<IpAddr, std::string, IpAddrHash> agent_names_;
  uint64_t polls_ = 0;
};

// Reads the counter samples of a pcap/pcapng capture of sFlow export datagrams (flow samples are
// decoded and counted as usual, their flows not kept). Errors: ReadPcapFile's (kNotFound,
// kDataLoss, kInvalidArgument); kDataLoss when the capture holds no generic interface counters
// (the message says how many sFlow datagrams and counter samples it had).
StatusOr<CountersData> ReadSflowCounters(const std::string& path, Stats* stats);

}  // namespace prism::counters
