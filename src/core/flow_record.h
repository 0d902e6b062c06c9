// File: core/flow_record.h
// The normalized flow record every source produces (CSV, IPFIX, pcap, simulator) and every stage
// consumes. A record stands for one transfer seen at one switch: one RDMA message, a QP's packets
// aggregated by an exporter until a timeout, or a TCP flowlet (docs/design.md, FlowRecord). Flat
// and copyable; units are in the names.
#pragma once

#include <cstdint>
#include <limits>

#include "core/ip_addr.h"

namespace prism {

// Index into a PointTable (core/name_table.h): the switch / exporter / capture interface the record
// was observed at.
using PointId = uint32_t;
inline constexpr PointId kNoPoint = std::numeric_limits<PointId>::max();

struct FlowRecord {
  int64_t start_ns = 0;  // Unix epoch ns of the first byte
  int64_t end_ns = 0;    // Unix epoch ns of the last byte (>= start_ns)
  IpAddr src;
  IpAddr dst;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint8_t proto = 0;        // IP protocol number (17 for RoCEv2 over UDP)
  uint32_t qp = 0;          // RoCE destination QP: the flow discriminator; 0 when not RDMA
  uint64_t bytes = 0;       // payload bytes as reported (not scaled by sampling)
  uint64_t packets = 0;
  uint32_t sampling_rate = 1;  // 1 = every packet seen; N = 1-in-N sampling
  PointId point = kNoPoint;
};

// Where sources deliver records. Sources know nothing of what happens next.
class FlowSink {
 public:
  virtual ~FlowSink() = default;
  virtual void OnRecord(const FlowRecord& record) = 0;
};

}  // namespace prism
