#include "ingest/sflow/sflow_writer.h"

namespace prism::ingest {
namespace {

void Put32(std::vector<uint8_t>* out, uint32_t v) {
  out->push_back(static_cast<uint8_t>(v >> 24));
  out->push_back(static_cast<uint8_t>(v >> 16));
  out->push_back(static_cast<uint8_t>(v >> 8));
  out->push_back(static_cast<uint8_t>(v));
}

void Put64(std::vector<uint8_t>* out, uint64_t v) {
  Put32(out, static_cast<uint32_t>(v >> 32));
  Put32(out, static_cast<uint32_t>(v));
}

// Opens an element (type, length to be filled in); returns where its length word is.
size_t Open(std::vector<uint8_t>* out, uint32_t type) {
  Put32(out, type);
  Put32(out, 0);
  return out->size() - 4;
}

void Close(std::vector<uint8_t>* out, size_t length_at) {
  const uint32_t n = static_cast<uint32_t>(out->size() - length_at - 4);
  for (int i = 0; i < 4; ++i) (*out)[length_at + i] = static_cast<uint8_t>(n >> (24 - 8 * i));
}

}  // namespace

void SflowDatagramWriter::AddFlowSample(const SflowFlowSampleSpec& s) {
  const size_t sample =
      Open(&body_, s.expanded ? kSflowExpandedFlowSample : kSflowFlowSample);
  Put32(&body_, s.sequence);
  if (s.expanded) {
    Put32(&body_, s.source_type);
    Put32(&body_, s.source_index);
  } else {
    Put32(&body_, s.source_type << 24 | (s.source_index & 0xFFFFFF));
  }
  Put32(&body_, s.sampling_rate);
  Put32(&body_, s.sample_pool);
  Put32(&body_, s.drops);
  if (s.expanded) {
    Put32(&body_, 0);  // input format: ifIndex
    Put32(&body_, s.input);
    Put32(&body_, 0);
    Put32(&body_, s.output);
  } else {
    Put32(&body_, s.input);
    Put32(&body_, s.output);
  }
  Put32(&body_, 1);  // one flow record: the raw packet header
  const size_t record = Open(&body_, kSflowRawPacketHeader);
  Put32(&body_, s.header_protocol);
  Put32(&body_, s.frame_length);
  Put32(&body_, 0);  // stripped
  Put32(&body_, static_cast<uint32_t>(s.header.size()));
  body_.insert(body_.end(), s.header.begin(), s.header.end());
  while (body_.size() % 4 != 0) body_.push_back(0);
  Close(&body_, record);
  Close(&body_, sample);
  ++samples_;
}

void SflowDatagramWriter::AddCounterSample(uint32_t sequence, uint32_t source_index,
                                           const SflowInterfaceCounters& c) {
  const size_t sample = Open(&body_, kSflowCounterSample);
  Put32(&body_, sequence);
  Put32(&body_, source_index & 0xFFFFFF);
  Put32(&body_, 1);
  const size_t record = Open(&body_, kSflowGenericIfCounters);
  Put32(&body_, c.if_index);
  Put32(&body_, c.if_type);
  Put64(&body_, c.if_speed);
  Put32(&body_, c.if_direction);
  Put32(&body_, c.if_status);
  Put64(&body_, c.in_octets);
  for (uint32_t v : {c.in_ucast_pkts, c.in_multicast_pkts, c.in_broadcast_pkts, c.in_discards,
                     c.in_errors, c.in_unknown_protos}) {
    Put32(&body_, v);
  }
  Put64(&body_, c.out_octets);
  for (uint32_t v : {c.out_ucast_pkts, c.out_multicast_pkts, c.out_broadcast_pkts,
                     c.out_discards, c.out_errors, c.promiscuous_mode}) {
    Put32(&body_, v);
  }
  Close(&body_, record);
  Close(&body_, sample);
  ++samples_;
}

size_t SflowDatagramWriter::bytes() const {
  return 4 + 4 + (agent_.is_v4() ? 4 : 16) + 16 + body_.size();
}

std::vector<uint8_t> SflowDatagramWriter::Finish(uint32_t sequence, uint32_t uptime_ms) {
  std::vector<uint8_t> out;
  out.reserve(bytes());
  Put32(&out, kSflowVersion);
  if (agent_.is_v4()) {
    Put32(&out, 1);
    Put32(&out, agent_.v4());
  } else {
    Put32(&out, 2);
    out.insert(out.end(), agent_.bytes().begin(), agent_.bytes().end());
  }
  Put32(&out, sub_agent_);
  Put32(&out, sequence);
  Put32(&out, uptime_ms);
  Put32(&out, static_cast<uint32_t>(samples_));
  out.insert(out.end(), body_.begin(), body_.end());
  body_.clear();
  samples_ = 0;
  return out;
}

}  // namespace prism::ingest
