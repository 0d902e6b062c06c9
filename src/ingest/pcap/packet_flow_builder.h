// File: ingest/pcap/packet_flow_builder.h
// Turns decoded packets (PacketMeta, packet/dispatch.h) into FlowRecords, the way a switch-side
// collector would if it saw every packet:
//   - RoCEv2: one record per RDMA message per (observation point, src, dst, destination QP):
//     FIRST .. MIDDLE .. LAST, or ONLY, of SEND / RDMA WRITE / READ response. Bytes are RDMA
//     payload bytes from the length fields. A message is closed by its LAST, by a new FIRST on the
//     same QP, by an idle timeout, or at Finish(); the early closes are counted
//     (roce_message_incomplete), as are messages first seen at MIDDLE/LAST (roce_message_headless).
//     An ONLY inside an open message (a CTS-sized message the capture interleaves) is a record of
//     its own and leaves the open one alone. ACK/NAK/CNP/READ requests are counted, not flows.
//   - TCP and other UDP: flowlets per direction of a 5-tuple, split when the gap between two
//     packets with payload exceeds `flowlet_gap_ns`. Segments without payload are not flow bytes.
//   - Sampled packets (sFlow: PacketMeta::sampling_rate N > 1): message assembly needs every
//     packet of a message, which 1-in-N sampling does not give, so RoCE data packets and TCP/UDP
//     packets alike become flowlets per (point, 5-tuple, destination QP, N), carrying
//     sampling_rate N so that transfers count their bytes N times (as for sampled IPFIX). Samples
//     of a busy stream are about N times further apart than its packets, so the idle gap that
//     ends a sampled flowlet is the unsampled one times N, but at most `sampled_gap_max_ns`:
//     longer, and the samples of consecutive communication phases (micro-batches, steps) would
//     merge into one record and the step timeline would be lost; shorter records are regrouped
//     into transfers downstream anyway. ACK/CNP/READ request samples are counted as above.
//     A sampled RoCE flowlet of two or more samples whose BTH PSNs step forward stands for the
//     packets its PSN span counts plus the expected unseen ones at each end (pcap/psn_span.h),
//     not for samples x N: its record's bytes are that estimate / N, so that bytes x N (what
//     transfers and rates count) is the estimate. Otherwise the bytes are the samples' own.
// The observation point is the sampling agent for sampled packets (PacketMeta::agent_point),
// "EXPORTER/erspan-SESSION" for ERSPAN-mirrored packets, else `capture_point`. Memory is bounded by `max_open_flows`: open entries idle for longer than
// their timeout are swept as time advances, and a full table closes its older half early
// (flow_table_evictions). Records come out in close order, not start order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "core/flow_record.h"
#include "core/ip_addr.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "ingest/packet/packet_meta.h"
#include "ingest/pcap/psn_span.h"

namespace prism::ingest {

struct PacketFlowOptions {
  int64_t flowlet_gap_ns = 1'000'000;         // TCP/UDP: idle gap that ends a flowlet
  int64_t roce_idle_timeout_ns = 10'000'000;  // RoCE: idle time that closes an open message
  int64_t sampled_gap_max_ns = 10'000'000;    // sampled packets: cap of flowlet_gap_ns x N
  size_t max_open_flows = size_t{1} << 20;
  std::string capture_point;                  // point name for packets not seen via ERSPAN
};

class PacketFlowBuilder {
 public:
  PacketFlowBuilder(const PacketFlowOptions& options, FlowSink* sink, PointTable* points,
                    Stats* stats);
  PacketFlowBuilder(const PacketFlowBuilder&) = delete;
  PacketFlowBuilder& operator=(const PacketFlowBuilder&) = delete;

  // `meta` must be a decoded IP packet with a transport header (DecodePacket returned nullopt).
  void OnPacket(const PacketMeta& meta);
  // Closes what has been idle past its timeout at `now_ns` (live sources: the stream went quiet).
  void AdvanceTo(int64_t now_ns);
  // Closes everything still open. The builder can be used again afterwards.
  void Finish();

  uint64_t records() const { return records_; }
  size_t open_flows() const { return open_.size(); }

 private:
  struct Key {
    IpAddr src, dst;
    PointId point;
    uint32_t qp;  // RoCE: destination QP; flowlets: 0
    uint16_t src_port, dst_port;  // flowlets only (0 for RoCE)
    uint8_t proto;
    bool roce;               // an unsampled RoCE message
    uint32_t sampling_rate;  // 1 = unsampled
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Open {
    int64_t start_ns, last_ns;
    uint64_t bytes, packets;
    uint16_t src_port, dst_port;
    PsnSpan psn;  // sampled flowlets: the BTH PSNs of the samples
  };

  PointId PointOf(const PacketMeta& m);
  void OnRoce(const PacketMeta& m, PointId point);
  void OnFlowlet(const PacketMeta& m, PointId point);
  void OnSampled(const PacketMeta& m, PointId point);
  int64_t TimeoutOf(const Key& k) const;
  void Emit(const Key& k, const Open& o);
  void Sweep(int64_t now_ns);
  void EvictOlderHalf();
  void Count(Stat s) {
    if (stats_ != nullptr) stats_->Add(s);
  }

  PacketFlowOptions options_;
  FlowSink* sink_;
  PointTable* points_;
  Stats* stats_;
  PointId capture_point_;
  std::unordered_map<Key, Open, KeyHash> open_;
  struct SpanKey {
    IpAddr exporter;
    uint16_t session;
    friend bool operator==(const SpanKey&, const SpanKey&) = default;
  };
  struct SpanKeyHash {
    size_t operator()(const SpanKey& k) const { return IpAddrHash()(k.exporter) ^ k.session; }
  };
  std::unordered_map<SpanKey, PointId, SpanKeyHash> span_points_;
  int64_t max_ts_ns_ = INT64_MIN;
  int64_t last_sweep_ns_ = INT64_MIN;
  uint64_t records_ = 0;
};

}  // namespace prism::ingest
