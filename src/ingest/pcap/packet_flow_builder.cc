#include "ingest/pcap/packet_flow_builder.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "ingest/packet/roce_bth.h"

namespace prism::ingest {

size_t PacketFlowBuilder::KeyHash::operator()(const Key& k) const {
  uint64_t h = IpAddrHash()(k.src) * 0x9E3779B97F4A7C15ull;
  h ^= IpAddrHash()(k.dst) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  uint64_t rest = (uint64_t{k.qp} << 32) ^ (uint64_t{k.src_port} << 16) ^ k.dst_port ^
                  (uint64_t{k.proto} << 56) ^ (uint64_t{k.point} << 24) ^ (k.roce ? 1ull << 63 : 0);
  h ^= uint64_t{k.sampling_rate} * 0x9E3779B97F4A7C15ull;
  h ^= rest * 0xD6E8FEB86659FD93ull;
  return static_cast<size_t>(h ^ (h >> 31));
}

PacketFlowBuilder::PacketFlowBuilder(const PacketFlowOptions& options, FlowSink* sink,
                                     PointTable* points, Stats* stats)
    : options_(options), sink_(sink), points_(points), stats_(stats) {
  options_.max_open_flows = std::max<size_t>(options_.max_open_flows, 2);
  options_.flowlet_gap_ns = std::max<int64_t>(options_.flowlet_gap_ns, 0);
  options_.roce_idle_timeout_ns = std::max<int64_t>(options_.roce_idle_timeout_ns, 0);
  options_.sampled_gap_max_ns = std::max<int64_t>(options_.sampled_gap_max_ns, 0);
  capture_point_ = options_.capture_point.empty() ? kNoPoint : points_->Intern(options_.capture_point);
}

PointId PacketFlowBuilder::PointOf(const PacketMeta& m) {
  if (m.has_agent_point) return m.agent_point;
  if (!m.has_span) return capture_point_;
  SpanKey key{m.span_exporter, m.span_session};
  auto it = span_points_.find(key);
  if (it != span_points_.end()) return it->second;
  if (span_points_.size() >= 65536) return capture_point_;  // hostile input: bound the map
  PointId id = points_->Intern(fmt::format("{}/erspan-{}", m.span_exporter.ToString(), m.span_session));
  span_points_.emplace(key, id);
  return id;
}

void PacketFlowBuilder::OnPacket(const PacketMeta& m) {
  if (m.ts_ns > max_ts_ns_) max_ts_ns_ = m.ts_ns;
  const int64_t sweep_every =
      std::max<int64_t>(1, std::min(options_.flowlet_gap_ns, options_.roce_idle_timeout_ns));
  if (last_sweep_ns_ == INT64_MIN) last_sweep_ns_ = max_ts_ns_;
  if (max_ts_ns_ - last_sweep_ns_ >= sweep_every) Sweep(max_ts_ns_);
  if (open_.size() >= options_.max_open_flows) EvictOlderHalf();
  const PointId point = PointOf(m);
  if (m.sampling_rate > 1) {
    OnSampled(m, point);
  } else if (m.has_bth) {
    OnRoce(m, point);
  } else {
    OnFlowlet(m, point);
  }
}

void PacketFlowBuilder::OnRoce(const PacketMeta& m, PointId point) {
  const OpcodeInfo info = ClassifyOpcode(m.bth_opcode);
  switch (info.kind) {
    case RoceKind::kAck:
      Count(m.has_aeth && IsNakSyndrome(m.aeth_syndrome) ? Stat::roce_nak : Stat::roce_ack);
      return;
    case RoceKind::kCnp: Count(Stat::roce_cnp); return;
    case RoceKind::kReadRequest: Count(Stat::roce_read_request); return;
    case RoceKind::kOther: Count(Stat::roce_other_opcode); return;
    case RoceKind::kData: break;
  }
  Key key{m.src, m.dst, point, m.dest_qp, 0, 0, m.proto, true, 1};
  const Open fresh{m.ts_ns, m.ts_ns, m.roce_payload_bytes, 1, m.src_port, m.dst_port, {}};
  if (info.part == MessagePart::kOnly) {
    Emit(key, fresh);
    return;
  }
  auto it = open_.find(key);
  if (it != open_.end() && (info.part == MessagePart::kFirst ||
                            m.ts_ns - it->second.last_ns > options_.roce_idle_timeout_ns)) {
    Count(Stat::roce_message_incomplete);
    Emit(key, it->second);
    open_.erase(it);
    it = open_.end();
  }
  if (it == open_.end()) {
    if (info.part != MessagePart::kFirst) Count(Stat::roce_message_headless);
    if (info.part == MessagePart::kLast) {
      Emit(key, fresh);
      return;
    }
    open_.emplace(key, fresh);
    return;
  }
  Open& o = it->second;
  o.start_ns = std::min(o.start_ns, m.ts_ns);
  o.last_ns = std::max(o.last_ns, m.ts_ns);
  o.bytes += m.roce_payload_bytes;
  ++o.packets;
  if (info.part == MessagePart::kLast) {
    Emit(key, o);
    open_.erase(it);
  }
}

void PacketFlowBuilder::OnFlowlet(const PacketMeta& m, PointId point) {
  if (m.payload_bytes == 0) {
    Count(m.proto == 6 ? Stat::tcp_no_payload : Stat::udp_no_payload);
    return;
  }
  Key key{m.src, m.dst, point, 0, m.src_port, m.dst_port, m.proto, false, 1};
  auto [it, inserted] = open_.try_emplace(
      key, Open{m.ts_ns, m.ts_ns, m.payload_bytes, 1, m.src_port, m.dst_port, {}});
  if (inserted) return;
  Open& o = it->second;
  if (m.ts_ns - o.last_ns > options_.flowlet_gap_ns) {
    Emit(key, o);
    o = Open{m.ts_ns, m.ts_ns, m.payload_bytes, 1, m.src_port, m.dst_port, {}};
    return;
  }
  o.start_ns = std::min(o.start_ns, m.ts_ns);
  o.last_ns = std::max(o.last_ns, m.ts_ns);
  o.bytes += m.payload_bytes;
  ++o.packets;
}

int64_t PacketFlowBuilder::TimeoutOf(const Key& k) const {
  if (k.roce) return options_.roce_idle_timeout_ns;
  if (k.sampling_rate <= 1) return options_.flowlet_gap_ns;
  const __int128 scaled = static_cast<__int128>(options_.flowlet_gap_ns) * k.sampling_rate;
  return static_cast<int64_t>(std::min<__int128>(scaled, options_.sampled_gap_max_ns));
}

void PacketFlowBuilder::OnSampled(const PacketMeta& m, PointId point) {
  uint32_t bytes = m.payload_bytes;
  uint32_t qp = 0;
  if (m.has_bth) {
    switch (ClassifyOpcode(m.bth_opcode).kind) {
      case RoceKind::kAck:
        Count(m.has_aeth && IsNakSyndrome(m.aeth_syndrome) ? Stat::roce_nak : Stat::roce_ack);
        return;
      case RoceKind::kCnp: Count(Stat::roce_cnp); return;
      case RoceKind::kReadRequest: Count(Stat::roce_read_request); return;
      case RoceKind::kOther: Count(Stat::roce_other_opcode); return;
      case RoceKind::kData: break;
    }
    bytes = m.roce_payload_bytes;
    qp = m.dest_qp;
  } else if (bytes == 0) {
    Count(m.proto == 6 ? Stat::tcp_no_payload : Stat::udp_no_payload);
    return;
  }
  Key key{m.src, m.dst, point, qp, m.src_port, m.dst_port, m.proto, false, m.sampling_rate};
  Open fresh{m.ts_ns, m.ts_ns, bytes, 1, m.src_port, m.dst_port, {}};
  fresh.psn.Add(m.has_bth, m.psn);
  auto [it, inserted] = open_.try_emplace(key, fresh);
  if (inserted) return;
  Open& o = it->second;
  if (m.ts_ns - o.last_ns > TimeoutOf(key)) {
    Emit(key, o);
    o = fresh;
    return;
  }
  o.start_ns = std::min(o.start_ns, m.ts_ns);
  o.last_ns = std::max(o.last_ns, m.ts_ns);
  o.bytes += bytes;
  ++o.packets;
  o.psn.Add(m.has_bth, m.psn);
}

void PacketFlowBuilder::Emit(const Key& k, const Open& o) {
  FlowRecord r;
  r.start_ns = o.start_ns;
  r.end_ns = o.last_ns;
  r.src = k.src;
  r.dst = k.dst;
  r.src_port = o.src_port;
  r.dst_port = o.dst_port;
  r.proto = k.proto;
  r.qp = k.qp;
  r.bytes = o.bytes;
  if (k.sampling_rate > 1 && o.psn.any_psn()) {
    const SampledBytes est = EstimateSampledBytes(&o.psn, o.bytes, o.packets, k.sampling_rate);
    if (est.how == SampledEstimate::kPsnSpan) {
      // The record carries sampled bytes that downstream multiplies by N; rounding to the
      // nearest multiple of N is at most N / 2 bytes off an estimate of at least N packets.
      r.bytes = (est.bytes + k.sampling_rate / 2) / k.sampling_rate;
      Count(Stat::sampled_psn_span_estimates);
    } else if (est.how == SampledEstimate::kPsnUnusable) {
      Count(Stat::sampled_psn_span_unusable);
    }
  }
  r.packets = o.packets;
  r.point = k.point;
  r.sampling_rate = k.sampling_rate;
  ++records_;
  Count(Stat::records_read);
  sink_->OnRecord(r);
}

void PacketFlowBuilder::AdvanceTo(int64_t now_ns) {
  if (now_ns <= max_ts_ns_) return;
  max_ts_ns_ = now_ns;
  Sweep(now_ns);
}

void PacketFlowBuilder::Sweep(int64_t now_ns) {
  last_sweep_ns_ = now_ns;
  for (auto it = open_.begin(); it != open_.end();) {
    const int64_t timeout = TimeoutOf(it->first);
    if (now_ns - it->second.last_ns > timeout) {
      if (it->first.roce) Count(Stat::roce_message_incomplete);
      Emit(it->first, it->second);
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

void PacketFlowBuilder::EvictOlderHalf() {
  std::vector<int64_t> lasts;
  lasts.reserve(open_.size());
  for (const auto& [k, o] : open_) lasts.push_back(o.last_ns);
  auto mid = lasts.begin() + static_cast<ptrdiff_t>(lasts.size() / 2);
  std::nth_element(lasts.begin(), mid, lasts.end());
  const int64_t cut = *mid;
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.last_ns <= cut) {
      if (stats_ != nullptr) stats_->Add(Stat::flow_table_evictions);
      if (it->first.roce) Count(Stat::roce_message_incomplete);
      Emit(it->first, it->second);
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

void PacketFlowBuilder::Finish() {
  for (const auto& [k, o] : open_) {
    if (k.roce) Count(Stat::roce_message_incomplete);
    Emit(k, o);
  }
  open_.clear();
  max_ts_ns_ = last_sweep_ns_ = INT64_MIN;
}

}  // namespace prism::ingest
