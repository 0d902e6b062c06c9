#include "sim/sflow_emitter.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <unordered_map>

#include "ingest/sflow/sflow_format.h"
#include "ingest/sflow/sflow_writer.h"

namespace prism::sim {
namespace {

constexpr uint32_t kMtuPayloadBytes = 4096;  // as sim/packet_emitter.h
constexpr size_t kSamplesPerDatagram = 8;
constexpr int64_t kMaxDatagramAgeNs = 1'000'000;

struct Sample {
  int64_t ts_ns;
  uint32_t record;
  uint32_t packet;  // index within the record's message
  uint32_t pool;    // the agent's sample pool when it was taken
  uint32_t psn;     // the packet's BTH sequence number
};

uint64_t PacketsOf(const FlowRecord& r) {
  return std::max<uint64_t>(1, (r.bytes + kMtuPayloadBytes - 1) / kMtuPayloadBytes);
}

int64_t TimeOf(const FlowRecord& r, uint64_t i, uint64_t n) {
  if (n <= 1) return r.start_ns;
  const __int128 span = r.end_ns - r.start_ns;
  return r.start_ns + static_cast<int64_t>(span * static_cast<__int128>(i) /
                                           static_cast<__int128>(n - 1));
}

struct Bytes {
  std::vector<uint8_t> v;
  void U8(uint32_t x) { v.push_back(static_cast<uint8_t>(x)); }
  void U16(uint32_t x) {
    U8(x >> 8);
    U8(x);
  }
  void U32(uint32_t x) {
    U16(x >> 16);
    U16(x);
  }
  void Addr(const IpAddr& a) {
    if (a.is_v4()) {
      U32(a.v4());
    } else {
      v.insert(v.end(), a.bytes().begin(), a.bytes().end());
    }
  }
};

// Packet `i` of `n` of record `r`'s RDMA WRITE message, as sampled: the frame's first `snaplen`
// bytes and its length on the wire (Ethernet, IP, UDP 4791, BTH, RETH/immediate, payload, ICRC).
std::vector<uint8_t> RoceFrame(const FlowRecord& r, uint64_t i, uint64_t n, uint32_t psn,
                               uint32_t snaplen, uint32_t* wire_bytes) {
  const uint32_t payload = static_cast<uint32_t>(
      i + 1 < n ? kMtuPayloadBytes : r.bytes - uint64_t{kMtuPayloadBytes} * (n - 1));
  uint8_t opcode = 0x07;  // MIDDLE
  uint32_t ext = 0;
  if (n == 1) {
    opcode = 0x0A, ext = 16;  // ONLY (RETH)
  } else if (i == 0) {
    opcode = 0x06, ext = 16;  // FIRST (RETH)
  } else if (i + 1 == n) {
    opcode = 0x09, ext = 4;  // LAST with immediate
  }
  const bool v4 = r.src.is_v4() && r.dst.is_v4();
  const uint32_t udp_bytes = 8 + 12 + ext + payload + 4;
  Bytes b;
  for (uint8_t m : {2, 0, 0x5e, 0, 0, 2, 2, 0, 0x5e, 0, 0, 1}) b.U8(m);
  b.U16(v4 ? 0x0800 : 0x86DD);
  if (v4) {
    b.U8(0x45), b.U8(0), b.U16(20 + udp_bytes), b.U16(0), b.U16(0x4000), b.U8(64), b.U8(17);
    b.U16(0);
    b.Addr(r.src);
    b.Addr(r.dst);
  } else {
    b.U32(0x60000000), b.U16(udp_bytes), b.U8(17), b.U8(64);
    b.v.insert(b.v.end(), r.src.bytes().begin(), r.src.bytes().end());
    b.v.insert(b.v.end(), r.dst.bytes().begin(), r.dst.bytes().end());
  }
  b.U16(r.src_port != 0 ? r.src_port : 49152), b.U16(4791), b.U16(udp_bytes), b.U16(0);
  b.U8(opcode), b.U8(0), b.U16(0xFFFF), b.U32(r.qp & 0xFFFFFF), b.U32(psn & 0xFFFFFF);
  *wire_bytes = 14 + (v4 ? 20 : 40) + udp_bytes;
  b.v.resize(std::min<uint32_t>(snaplen, *wire_bytes), 0);
  return b.v;
}

// An export datagram as the collector's capture holds it: Ethernet, IPv4 from the agent to the
// collector (172.31.255.254), UDP 6343 -> 6343.
std::vector<uint8_t> ExportFrame(const IpAddr& agent, const std::vector<uint8_t>& datagram) {
  Bytes f;
  for (uint8_t m : {2, 0, 0x5e, 0, 0, 0xFE, 2, 0, 0x5e, 0, 0, 0xFD}) f.U8(m);
  f.U16(0x0800);
  const uint32_t udp_bytes = 8 + static_cast<uint32_t>(datagram.size());
  f.U8(0x45), f.U8(0), f.U16(20 + udp_bytes), f.U16(0), f.U16(0x4000), f.U8(64), f.U8(17);
  f.U16(0);
  f.Addr(agent);
  f.U32(0xAC1FFFFEu);  // 172.31.255.254: the collector
  f.U16(ingest::kSflowDefaultPort), f.U16(ingest::kSflowDefaultPort), f.U16(udp_bytes);
  f.U16(0);
  f.v.insert(f.v.end(), datagram.begin(), datagram.end());
  return std::move(f.v);
}

void DumpFrame(pcap_dumper_t* dump, int64_t at_ns, const std::vector<uint8_t>& frame) {
  pcap_pkthdr hdr{};
  hdr.ts.tv_sec = at_ns / 1'000'000'000;
  hdr.ts.tv_usec = at_ns % 1'000'000'000;  // ns: the dumper was opened at ns precision
  hdr.caplen = hdr.len = static_cast<uint32_t>(frame.size());
  pcap_dump(reinterpret_cast<u_char*>(dump), &hdr, frame.data());
}

// The agent's uptime when it sends a datagram whose last sample is at `last_ns`: it booted 1 s
// before the first sample or poll of the run (`t0_ns`).
uint32_t UptimeMs(int64_t last_ns, int64_t t0_ns) {
  return static_cast<uint32_t>((last_ns - t0_ns) / 1'000'000 + 1000);
}

struct Frame {
  int64_t at_ns;
  std::vector<uint8_t> bytes;
};

// The counter samples of `polls`, packed per agent (sub-agent 1) into datagrams of at most 8
// samples sent 1 ms after their first (or when full), as frames in time order.
std::vector<Frame> CounterFrames(std::vector<SflowCounterPoll> polls, int64_t t0_ns,
                                 uint64_t if_speed_bps) {
  std::stable_sort(polls.begin(), polls.end(), [](const SflowCounterPoll& x,
                                                  const SflowCounterPoll& y) {
    return x.ts_ns < y.ts_ns;
  });
  struct Agent {
    std::unique_ptr<ingest::SflowDatagramWriter> writer;
    int64_t first_ns = 0, last_ns = 0;
    uint32_t datagram_seq = 0;
    std::unordered_map<uint32_t, uint32_t> sample_seq;  // per ifIndex
    IpAddr address;
  };
  std::map<PointId, Agent> agents;
  std::vector<Frame> frames;
  auto send = [&](Agent& a, int64_t at_ns) {
    frames.push_back(
        {at_ns, ExportFrame(a.address, a.writer->Finish(++a.datagram_seq,
                                                        UptimeMs(a.last_ns, t0_ns)))});
  };
  for (const SflowCounterPoll& p : polls) {
    Agent& a = agents[p.point];
    if (!a.writer) {
      a.address = SflowEmitter::AgentAddress(p.point);
      a.writer = std::make_unique<ingest::SflowDatagramWriter>(a.address, 1);
    }
    if (a.writer->samples() > 0 && p.ts_ns > a.first_ns + kMaxDatagramAgeNs) {
      send(a, a.first_ns + kMaxDatagramAgeNs);
    }
    if (a.writer->samples() == 0) a.first_ns = p.ts_ns;
    ingest::SflowInterfaceCounters c;
    c.if_index = p.if_index;
    c.if_type = 6;  // ethernetCsmacd
    c.if_speed = if_speed_bps;
    c.if_direction = 1;  // full duplex
    c.if_status = 3;     // admin and operationally up
    c.in_octets = p.in_octets;
    c.out_octets = p.out_octets;
    // 32-bit packet counters (wrapping as they do), of full-MTU RoCE packets.
    c.in_ucast_pkts = static_cast<uint32_t>(p.in_octets / (kMtuPayloadBytes + 62));
    c.out_ucast_pkts = static_cast<uint32_t>(p.out_octets / (kMtuPayloadBytes + 62));
    a.writer->AddCounterSample(++a.sample_seq[p.if_index], p.if_index, c);
    a.last_ns = p.ts_ns;
    if (a.writer->samples() >= kSamplesPerDatagram) send(a, a.last_ns);
  }
  for (auto& [point, a] : agents) {
    if (a.writer->samples() > 0) send(a, a.first_ns + kMaxDatagramAgeNs);
  }
  std::stable_sort(frames.begin(), frames.end(),
                   [](const Frame& x, const Frame& y) { return x.at_ns < y.at_ns; });
  return frames;
}

// Sampling, per agent in record start order: a countdown of packets to the next sample, drawn
// uniformly in 1..2N-1. The samples in time order; kInvalidArgument past `max_samples`.
StatusOr<std::vector<Sample>> DrawSamples(const std::vector<FlowRecord>& records,
                                          uint32_t n_rate, uint64_t seed, uint64_t max_samples) {
  std::vector<uint32_t> order(records.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return records[a].start_ns < records[b].start_ns;
  });
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> skip(1, 2 * uint64_t{n_rate} - 1);
  struct Agent {
    uint64_t countdown = 0;  // packets until the next sample (0 = draw one)
    uint64_t pool = 0;
  };
  std::unordered_map<PointId, Agent> agents;
  // A reliable-connected QP numbers its packets on from message to message (24 bits, from a
  // start of its own): the next PSN per (point, src, dst, QP) in start order, as each switch on
  // the QP's path sees them.
  struct QpKey {
    PointId point;
    IpAddr src, dst;
    uint32_t qp;
    bool operator==(const QpKey&) const = default;
  };
  struct QpKeyHash {
    size_t operator()(const QpKey& q) const {
      return IpAddrHash()(q.src) * 31 + IpAddrHash()(q.dst) * 17 + q.qp * 7 + q.point;
    }
  };
  std::unordered_map<QpKey, uint32_t, QpKeyHash> next_psn;
  std::vector<Sample> samples;
  for (uint32_t k : order) {
    const FlowRecord& r = records[k];
    const QpKey qk{r.point, r.src, r.dst, r.qp};
    auto [psn_it, fresh_qp] = next_psn.try_emplace(qk, 0);
    if (fresh_qp) psn_it->second = static_cast<uint32_t>(QpKeyHash()(qk) * 0x9E3779B1u) & 0xFFFFFF;
    const uint32_t psn0 = psn_it->second;
    Agent& a = agents[r.point];
    if (a.countdown == 0) a.countdown = skip(rng);
    const uint64_t n = PacketsOf(r);
    uint64_t i = a.countdown - 1;
    for (; i < n; i += skip(rng)) {
      if (samples.size() >= max_samples) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "--emit sflow: over {} samples; raise --sampling or use a smaller "
                         "scenario",
                         max_samples);
      }
      samples.push_back({TimeOf(r, i, n), k, static_cast<uint32_t>(i),
                         static_cast<uint32_t>(a.pool + i + 1),
                         static_cast<uint32_t>((psn0 + i) & 0xFFFFFF)});
    }
    psn_it->second = static_cast<uint32_t>((psn0 + n) & 0xFFFFFF);
    a.countdown = i - n + 1;
    a.pool += n;
  }
  std::stable_sort(samples.begin(), samples.end(),
                   [](const Sample& x, const Sample& y) { return x.ts_ns < y.ts_ns; });
  return samples;
}

// The capture being written: Ethernet frames, ns timestamps.
class PcapOut {
 public:
  static StatusOr<PcapOut> Open(const std::string& path) {
    Dead dead(pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO),
              pcap_close);
    if (!dead) return MakeError(ErrorCode::kInternal, "pcap_open_dead failed");
    Dumper dump(pcap_dump_open(dead.get(), path.c_str()), pcap_dump_close);
    if (!dump) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: cannot open for writing: {}", path,
                       pcap_geterr(dead.get()));
    }
    return PcapOut(std::move(dead), std::move(dump));
  }
  void Dump(int64_t at_ns, const std::vector<uint8_t>& frame) {
    DumpFrame(dump_.get(), at_ns, frame);
  }
  Status Flush(const std::string& path) {
    if (pcap_dump_flush(dump_.get()) != 0) {
      return MakeError(ErrorCode::kDataLoss, "{}: write failed", path);
    }
    return OkStatus();
  }

 private:
  using Dead = std::unique_ptr<pcap_t, void (*)(pcap_t*)>;
  using Dumper = std::unique_ptr<pcap_dumper_t, void (*)(pcap_dumper_t*)>;
  PcapOut(Dead dead, Dumper dump) : dead_(std::move(dead)), dump_(std::move(dump)) {}
  Dead dead_;    // declared first: the dumper is closed before the handle it was opened on
  Dumper dump_;
};

// The counter frames, handed out in time order between the flow datagrams.
class CounterQueue {
 public:
  explicit CounterQueue(std::vector<Frame> frames) : frames_(std::move(frames)) {}
  // Dumps every frame due at or before `at_ns` not dumped yet.
  void DumpUntil(int64_t at_ns, PcapOut* out) {
    for (; next_ < frames_.size() && frames_[next_].at_ns <= at_ns; ++next_) {
      out->Dump(frames_[next_].at_ns, frames_[next_].bytes);
    }
  }

 private:
  std::vector<Frame> frames_;
  size_t next_ = 0;
};

// Flow samples packed per agent (one per observation point, 172.16.x.y as the ERSPAN exporters of
// --emit pcap; sub-agent 0) into datagrams that go out when full (at their last sample) or 1 ms
// after their first sample: checked at every sample, so they are sent in time order.
class FlowDatagrams {
 public:
  using Send = std::function<void(int64_t at_ns, const std::vector<uint8_t>& frame)>;
  FlowDatagrams(const std::vector<FlowRecord>& records, uint32_t n_rate, uint32_t snaplen,
                int64_t t0_ns, Send send)
      : records_(records), n_rate_(n_rate), snaplen_(snaplen), t0_ns_(t0_ns),
        send_(std::move(send)) {}

  void Add(const Sample& s) {
    SendAged(s.ts_ns);
    const FlowRecord& r = records_[s.record];
    Open& o = open_[r.point];
    if (!o.writer) {
      o.address = SflowEmitter::AgentAddress(r.point);
      o.writer = std::make_unique<ingest::SflowDatagramWriter>(o.address, 0);
    }
    if (o.writer->samples() == 0) {
      o.first_ns = s.ts_ns;
      waiting_.push_back(&o);
    }
    uint32_t wire = 0;
    const std::vector<uint8_t> header =
        RoceFrame(r, s.packet, PacketsOf(r), s.psn, snaplen_, &wire);
    o.writer->AddFlowSample({.sequence = ++o.sample_seq, .source_index = 1,
                             .sampling_rate = n_rate_, .sample_pool = s.pool, .input = 1,
                             .output = 2, .frame_length = wire + 4 /* FCS */, .header = header});
    o.last_ns = s.ts_ns;
    if (o.writer->samples() >= kSamplesPerDatagram) {
      SendDatagram(o, o.last_ns);
      waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &o));
    }
  }

  // The datagrams still open, in order of their first sample.
  void Finish() {
    std::sort(waiting_.begin(), waiting_.end(),
              [](Open* a, Open* b) { return a->first_ns < b->first_ns; });
    for (Open* o : waiting_) SendDatagram(*o, o->first_ns + kMaxDatagramAgeNs);
    waiting_.clear();
  }

 private:
  struct Open {
    std::unique_ptr<ingest::SflowDatagramWriter> writer;
    int64_t first_ns = 0, last_ns = 0;
    uint32_t datagram_seq = 0, sample_seq = 0;
    IpAddr address;
  };

  // Sends the datagrams whose first sample is over 1 ms older than `now_ns`.
  void SendAged(int64_t now_ns) {
    for (size_t w = 0; w < waiting_.size();) {
      if (now_ns > waiting_[w]->first_ns + kMaxDatagramAgeNs) {
        SendDatagram(*waiting_[w], waiting_[w]->first_ns + kMaxDatagramAgeNs);
        waiting_[w] = waiting_.back();
        waiting_.pop_back();
      } else {
        ++w;
      }
    }
  }

  void SendDatagram(Open& o, int64_t at_ns) {
    const std::vector<uint8_t> d =
        o.writer->Finish(++o.datagram_seq, UptimeMs(o.last_ns, t0_ns_));
    send_(at_ns, ExportFrame(o.address, d));
  }

  const std::vector<FlowRecord>& records_;
  uint32_t n_rate_, snaplen_;
  int64_t t0_ns_;
  Send send_;
  std::unordered_map<PointId, Open> open_;  // node-based: `waiting_` points into it
  std::vector<Open*> waiting_;
};

// When the agents booted, less 1 s: the first sample or poll of the run (0 without either).
int64_t FirstEventNs(const std::vector<Sample>& samples,
                     const std::vector<SflowCounterPoll>& polls) {
  int64_t t0 = samples.empty() ? INT64_MAX : samples.front().ts_ns;
  for (const SflowCounterPoll& p : polls) t0 = std::min(t0, p.ts_ns);
  return t0 == INT64_MAX ? 0 : t0;
}

}  // namespace

IpAddr SflowEmitter::AgentAddress(PointId point) {
  return IpAddr::FromV4(0xAC100000u | ((point == kNoPoint ? 0 : point) & 0xFFFF));
}

Status SflowEmitter::Write(const std::string& path) const {
  const uint32_t n_rate = options_.sampling_rate;
  if (n_rate == 0) return MakeError(ErrorCode::kInvalidArgument, "--sampling must be >= 1");
  const uint32_t snaplen = std::clamp<uint32_t>(options_.snaplen, 64, 1024);
  PRISM_ASSIGN_OR_RETURN(const std::vector<Sample> samples,
                         DrawSamples(records_, n_rate, options_.seed, options_.max_samples));
  PRISM_ASSIGN_OR_RETURN(PcapOut out, PcapOut::Open(path));
  const int64_t t0 = FirstEventNs(samples, polls_);
  // Counter datagrams go out between the flow datagrams, in time order.
  CounterQueue counters(CounterFrames(polls_, t0, options_.if_speed_bps));
  FlowDatagrams flows(records_, n_rate, snaplen, t0,
                      [&](int64_t at_ns, const std::vector<uint8_t>& frame) {
                        counters.DumpUntil(at_ns, &out);
                        out.Dump(at_ns, frame);
                      });
  for (const Sample& s : samples) flows.Add(s);
  flows.Finish();
  counters.DumpUntil(INT64_MAX, &out);
  return out.Flush(path);
}

}  // namespace prism::sim
