// File: sim/packet_emitter.h
// `simulate --emit pcap`: turns the simulator's flow records back into the packets a switch
// mirror would capture, so the whole capture path (libpcap, decoders, RoCE message assembly,
// ERSPAN) is tested against ground truth. Each record becomes one RDMA WRITE message segmented at
// the MTU (4096 payload bytes): WRITE ONLY when it fits one packet, else WRITE FIRST (RETH),
// MIDDLE..., LAST with immediate (as NCCL's last write). Packets are spread evenly from the
// record's start to its end, so the capture's message has the record's times and bytes. With
// ERSPAN each packet is wrapped in GRE + ERSPAN type II or III, sent by one exporter address per
// observation point, the point id as the session id. Frames are cut at `snaplen` (lengths stay
// in the headers), as switches truncate mirrored packets. Records are buffered and merged into
// time order, so this is for small scenarios: Write() refuses more than `max_packets`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/flow_record.h"
#include "core/status.h"

namespace prism::sim {

struct PacketEmitOptions {
  uint32_t snaplen = 128;
  uint32_t mtu_payload_bytes = 4096;
  int erspan_type = 0;  // 0 = plain capture, 2 = ERSPAN II, 3 = ERSPAN III
  uint64_t max_packets = 20'000'000;
};

class PacketEmitter : public FlowSink {
 public:
  explicit PacketEmitter(const PacketEmitOptions& options) : options_(options) {}
  void OnRecord(const FlowRecord& r) override { records_.push_back(r); }

  // Packets the buffered records will become.
  uint64_t PacketCount() const;
  // Writes the capture (pcap, ns timestamps, Ethernet). kInvalidArgument when over max_packets
  // or a bad option, kDataLoss on a write error.
  Status Write(const std::string& path) const;

  uint64_t records() const { return records_.size(); }

 private:
  PacketEmitOptions options_;
  std::vector<FlowRecord> records_;
};

}  // namespace prism::sim
