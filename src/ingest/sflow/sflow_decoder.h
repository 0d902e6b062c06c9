// File: ingest/sflow/sflow_decoder.h
// Turns sFlow v5 datagrams (sflow/sflow_format.h) into flow records. Each flow sample's raw
// packet header goes through the same decoder chain as a captured frame (packet/dispatch.h:
// Ethernet, VLAN, IP, UDP, RoCEv2 BTH) and into a PacketFlowBuilder as a 1-in-N sampled packet
// (PacketMeta::sampling_rate = the sample's rate), seen at its agent (the observation point is
// the agent address) at the time the datagram was captured or received: sFlow samples carry no
// time of their own, only the agent's uptime. The builder makes flowlets of the samples and the
// records carry sampling_rate N, so transfers count their bytes N times
// (pcap/packet_flow_builder.h).
//
// Loss is counted (sflow/loss_tracker.h): datagram and flow-sample sequence gaps, the samples
// the agents dropped (the drops field). Counter samples are decoded and counted
// (sflow_counter_samples, sflow_interface_counters); each generic interface counter record goes
// to the counter observer, if one is set, as a poll of (agent, ifIndex) timed like the flow
// samples, by its datagram's capture or receive time (counters/sflow_counters.h turns them into
// the counters mode's port series). Bad data
// is counted (sflow_bad_datagram: the datagram is skipped; sflow_bad_sample: that sample is
// skipped), and the first few problems are printed on stderr as "NAME: [packet K: ]byte OFFSET:
// expected ..., got ...", OFFSET counted from the start of the sFlow datagram (the UDP payload),
// K the packet's number in its capture. No Status, no exceptions: fed from captures, sockets and
// the fuzzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>

#include "core/flow_record.h"
#include "core/ip_addr.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "ingest/packet/packet_meta.h"
#include "ingest/pcap/packet_flow_builder.h"
#include "ingest/sflow/loss_tracker.h"
#include "ingest/sflow/sflow_format.h"

namespace prism::ingest {

// One generic interface counter record (counter format 1) as it arrived: which agent sent it,
// when (the datagram's capture or receive time, as flow samples are timed) and the counters.
struct SflowInterfacePoll {
  IpAddr agent;
  uint32_t sub_agent = 0;
  int64_t ts_ns = 0;
  uint32_t uptime_ms = 0;  // the agent's, in the datagram header
  SflowInterfaceCounters counters;
};

class SflowDecoder {
 public:
  // `name` prefixes problem messages (a file name or "sflow collector ..."). Sampled packets go
  // to `packets`, which the caller owns and finishes.
  SflowDecoder(std::string name, PacketFlowBuilder* packets, PointTable* points, Stats* stats,
               int problem_log_cap = 5);
  SflowDecoder(const SflowDecoder&) = delete;
  SflowDecoder& operator=(const SflowDecoder&) = delete;

  // Decodes one datagram, seen at `ts_ns` (Unix epoch ns). `packet` is its packet number in a
  // capture (0 = not from a capture), for messages.
  void DecodeDatagram(std::span<const uint8_t> data, int64_t ts_ns, uint64_t packet = 0);

  // For captures: if the UDP datagram in `meta` looks like sFlow v5, decodes it (at the
  // packet's capture time) and returns true; else returns false.
  bool OnCapturedDatagram(const PacketMeta& meta, uint64_t packet = 0);

  // Called with every sampled packet the decoder chain accepted, before the flow builder sees it
  // (interop dumps: one line per sample).
  using SampleObserver = std::function<void(const PacketMeta&, const SflowRawHeader&)>;
  void SetSampleObserver(SampleObserver observer) { observer_ = std::move(observer); }

  // Called with every generic interface counter record that parsed.
  using CounterObserver = std::function<void(const SflowInterfacePoll&)>;
  void SetCounterObserver(CounterObserver observer) { counter_observer_ = std::move(observer); }

  // Prints "N more problems not shown" if problems were capped.
  void Finish();

  uint64_t datagrams() const { return datagrams_; }
  uint64_t flow_samples() const { return flow_samples_; }

 private:
  void OnFlowSample(const SflowDatagram& d, const SflowElement& e, PointId point, int64_t ts_ns);
  void OnCounterSample(const SflowDatagram& d, const SflowElement& e, int64_t ts_ns);
  void OnRawHeader(const SflowRawHeader& h, uint32_t sampling_rate, PointId point, int64_t ts_ns);
  PointId PointOf(const IpAddr& agent);
  void Problem(Stat stat, const SflowProblem& p);

  std::string name_;
  PacketFlowBuilder* packets_;
  PointTable* points_;
  Stats* stats_;
  int problem_log_cap_;
  int problems_logged_ = 0;
  uint64_t problems_hidden_ = 0;
  SflowLossTracker loss_;
  std::unordered_map<IpAddr, PointId, IpAddrHash> agent_points_;
  uint64_t datagrams_ = 0;
  uint64_t flow_samples_ = 0;
  uint64_t packet_ = 0;  // of the datagram being decoded, for messages
  SampleObserver observer_;
  CounterObserver counter_observer_;
};

}  // namespace prism::ingest
