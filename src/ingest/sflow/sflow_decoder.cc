#include "ingest/sflow/sflow_decoder.h"

#include <fmt/format.h>

#include "ingest/packet/decoders.h"
#include "ingest/packet/dispatch.h"

namespace prism::ingest {
namespace {

constexpr size_t kMaxAgents = 65536;

}  // namespace

SflowDecoder::SflowDecoder(std::string name, PacketFlowBuilder* packets, PointTable* points,
                           Stats* stats, int problem_log_cap)
    : name_(std::move(name)),
      packets_(packets),
      points_(points),
      stats_(stats),
      problem_log_cap_(problem_log_cap) {}

void SflowDecoder::Problem(Stat stat, const SflowProblem& p) {
  stats_->Add(stat);
  if (problems_logged_ < problem_log_cap_) {
    ++problems_logged_;
    const std::string packet = packet_ > 0 ? fmt::format("packet {}: ", packet_) : "";
    fmt::print(stderr, "{}: {}byte {}: {} ({})\n", name_, packet, p.offset, p.expected,
               stat == Stat::sflow_bad_datagram ? "sFlow datagram skipped" : "sFlow sample skipped");
  } else {
    ++problems_hidden_;
  }
}

void SflowDecoder::Finish() {
  if (problems_hidden_ > 0) {
    fmt::print(stderr, "{}: {} more sFlow problems not shown (see sflow_bad_* counts)\n", name_,
               problems_hidden_);
    problems_hidden_ = 0;
  }
}

PointId SflowDecoder::PointOf(const IpAddr& agent) {
  auto it = agent_points_.find(agent);
  if (it != agent_points_.end()) return it->second;
  const PointId id = points_->Intern(agent.ToString());
  if (agent_points_.size() < kMaxAgents) agent_points_.emplace(agent, id);
  return id;
}

bool SflowDecoder::OnCapturedDatagram(const PacketMeta& meta, uint64_t packet) {
  if (!LooksLikeSflowDatagram(meta.udp_payload, meta.payload_bytes)) return false;
  DecodeDatagram(meta.udp_payload, meta.ts_ns, packet);
  return true;
}

void SflowDecoder::DecodeDatagram(std::span<const uint8_t> data, int64_t ts_ns, uint64_t packet) {
  packet_ = packet;
  SflowDatagram d;
  SflowProblem problem;
  if (!ParseSflowDatagram(data, &d, &problem)) {
    Problem(Stat::sflow_bad_datagram, problem);
    return;
  }
  ++datagrams_;
  stats_->Add(Stat::sflow_datagrams);
  const SflowLossTracker::Gap gap = loss_.ObserveDatagram(d.agent, d.sub_agent, d.sequence);
  stats_->Add(Stat::sflow_datagrams_lost, gap.lost);
  if (gap.went_back) stats_->Add(Stat::sflow_sequence_went_back);
  const PointId point = PointOf(d.agent);
  for (const SflowElement& e : d.samples) {
    switch (e.type) {
      case kSflowFlowSample:
      case kSflowExpandedFlowSample:
        OnFlowSample(d, e, point, ts_ns);
        break;
      case kSflowCounterSample:
      case kSflowExpandedCounterSample:
        OnCounterSample(d, e, ts_ns);
        break;
      default:
        stats_->Add(Stat::sflow_other_samples);
    }
  }
}

void SflowDecoder::OnFlowSample(const SflowDatagram& d, const SflowElement& e, PointId point,
                                int64_t ts_ns) {
  SflowFlowSample s;
  SflowProblem problem;
  if (!ParseFlowSample(e, &s, &problem)) {
    Problem(Stat::sflow_bad_sample, problem);
    return;
  }
  const SflowLossTracker::Gap gap = loss_.ObserveFlowSample(
      d.agent, d.sub_agent, s.source_type, s.source_index, s.sequence, s.drops);
  stats_->Add(Stat::sflow_samples_lost, gap.lost);
  stats_->Add(Stat::sflow_samples_dropped, gap.dropped);
  if (gap.went_back) stats_->Add(Stat::sflow_sequence_went_back);
  // A sample's records describe one packet: its raw header is decoded once, the others (switch,
  // router, gateway data) are not needed to build flows.
  const SflowElement* header = nullptr;
  for (const SflowElement& r : s.records) {
    if (r.type == kSflowRawPacketHeader && header == nullptr) {
      header = &r;
    } else {
      stats_->Add(Stat::sflow_other_records);
    }
  }
  if (header == nullptr) {
    stats_->Add(Stat::sflow_sample_no_header);
    return;
  }
  SflowRawHeader h;
  if (!ParseRawHeader(*header, &h, &problem)) {
    Problem(Stat::sflow_bad_sample, problem);
    return;
  }
  ++flow_samples_;
  stats_->Add(Stat::sflow_flow_samples);
  OnRawHeader(h, s.sampling_rate, point, ts_ns);
}

void SflowDecoder::OnRawHeader(const SflowRawHeader& h, uint32_t sampling_rate, PointId point,
                               int64_t ts_ns) {
  uint32_t link = 0;
  switch (h.protocol) {
    case kSflowHeaderEthernet: link = kLinkEthernet; break;
    case kSflowHeaderIpv4: link = kLinkIpv4; break;
    case kSflowHeaderIpv6: link = kLinkIpv6; break;
    default: stats_->Add(Stat::sflow_header_unsupported); return;
  }
  PacketMeta meta;
  meta.ts_ns = ts_ns;
  meta.wire_len = h.frame_length;
  meta.sampling_rate = sampling_rate;
  meta.has_agent_point = true;
  meta.agent_point = point;
  if (std::optional<Stat> skip = DecodePacket(link, h.header, &meta)) {
    stats_->Add(*skip);
    return;
  }
  if (meta.has_span) stats_->Add(Stat::erspan_packets);
  if (observer_) observer_(meta, h);
  packets_->OnPacket(meta);
}

void SflowDecoder::OnCounterSample(const SflowDatagram& d, const SflowElement& e,
                                   int64_t ts_ns) {
  SflowCounterSample s;
  SflowProblem problem;
  if (!ParseCounterSample(e, &s, &problem)) {
    Problem(Stat::sflow_bad_sample, problem);
    return;
  }
  stats_->Add(Stat::sflow_counter_samples);
  for (const SflowElement& r : s.records) {
    if (r.type != kSflowGenericIfCounters) {
      stats_->Add(Stat::sflow_other_counter_records);
      continue;
    }
    SflowInterfaceCounters c;
    if (!ParseInterfaceCounters(r, &c, &problem)) {
      Problem(Stat::sflow_bad_sample, problem);
      continue;
    }
    stats_->Add(Stat::sflow_interface_counters);
    if (counter_observer_) {
      counter_observer_({.agent = d.agent, .sub_agent = d.sub_agent, .ts_ns = ts_ns,
                         .uptime_ms = d.uptime_ms, .counters = c});
    }
  }
}

}  // namespace prism::ingest
