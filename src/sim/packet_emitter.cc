#include "sim/packet_emitter.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <queue>
#include <unordered_map>

namespace prism::sim {
namespace {

constexpr uint16_t kRocePort = 4791;

struct Writer {
  uint8_t* p;
  void U8(uint8_t v) { *p++ = v; }
  void U16(uint16_t v) {
    U8(static_cast<uint8_t>(v >> 8));
    U8(static_cast<uint8_t>(v));
  }
  void U24(uint32_t v) {
    U8(static_cast<uint8_t>(v >> 16));
    U16(static_cast<uint16_t>(v));
  }
  void U32(uint32_t v) {
    U16(static_cast<uint16_t>(v >> 16));
    U16(static_cast<uint16_t>(v));
  }
  void Mac(uint8_t last) {
    const uint8_t m[6] = {0x02, 0x00, 0x5e, 0x00, 0x00, last};
    std::memcpy(p, m, 6);
    p += 6;
  }
  void Addr(const IpAddr& a) {
    if (a.is_v4()) {
      U32(a.v4());
    } else {
      std::memcpy(p, a.bytes().data(), 16);
      p += 16;
    }
  }
};

// IP (v4 or v6) header for `l4_bytes` of transport header + payload.
void IpHeader(Writer* w, const IpAddr& src, const IpAddr& dst, uint8_t proto, uint32_t l4_bytes) {
  if (src.is_v4() && dst.is_v4()) {
    w->U8(0x45);
    w->U8(0);
    w->U16(static_cast<uint16_t>(20 + l4_bytes));
    w->U16(0);
    w->U16(0x4000);  // DF
    w->U8(64);
    w->U8(proto);
    w->U16(0);  // checksum: not needed by any reader here
    w->Addr(src);
    w->Addr(dst);
  } else {
    w->U32(0x60000000);
    w->U16(static_cast<uint16_t>(l4_bytes));
    w->U8(proto);
    w->U8(64);
    std::memcpy(w->p, src.bytes().data(), 16);  // IPv4 as ::ffff:a.b.c.d when mixed
    std::memcpy(w->p + 16, dst.bytes().data(), 16);
    w->p += 32;
  }
}

uint32_t IpHeaderBytes(const IpAddr& src, const IpAddr& dst) {
  return src.is_v4() && dst.is_v4() ? 20 : 40;
}

struct Segment {
  uint8_t opcode;
  uint32_t ext_bytes;
  uint32_t payload;
};

Segment SegmentOf(uint64_t bytes, uint64_t i, uint64_t n, uint32_t mtu) {
  uint32_t payload = static_cast<uint32_t>(i + 1 < n ? mtu : bytes - mtu * (n - 1));
  if (n == 1) return {0x0A, 16, payload};      // RDMA WRITE ONLY (RETH)
  if (i == 0) return {0x06, 16, payload};      // FIRST (RETH)
  if (i + 1 < n) return {0x07, 0, payload};    // MIDDLE
  return {0x09, 4, payload};                   // LAST with immediate
}

Status CheckOptions(const PacketEmitOptions& o, uint64_t total_packets) {
  if (o.erspan_type != 0 && o.erspan_type != 2 && o.erspan_type != 3) {
    return MakeError(ErrorCode::kInvalidArgument, "--erspan must be 2 or 3, got {}",
                     o.erspan_type);
  }
  if (o.mtu_payload_bytes < 256 || o.mtu_payload_bytes > 9000) {
    return MakeError(ErrorCode::kInvalidArgument, "MTU payload must be 256..9000 bytes");
  }
  if (total_packets > o.max_packets) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "--emit pcap: this scenario is {} packets, over the limit of {}; use a small "
                     "scenario such as pcap-tiny",
                     total_packets, o.max_packets);
  }
  return OkStatus();
}

uint64_t PacketsOf(const FlowRecord& r, uint32_t mtu) {
  return std::max<uint64_t>(1, (r.bytes + mtu - 1) / mtu);
}

// Packet i of n, spread evenly from the record's start to its end (128-bit: span * i overflows
// 64 bits for long records of many packets).
int64_t PacketTime(const FlowRecord& r, uint64_t i, uint64_t n) {
  if (n <= 1) return r.start_ns;
  __int128 span = r.end_ns - r.start_ns;
  return r.start_ns + static_cast<int64_t>(span * static_cast<__int128>(i) /
                                           static_cast<__int128>(n - 1));
}

// Every packet of every record in time order (ties by record index): records enter a heap of
// (next packet time, record, packet index) in start order, so only records already started are
// in it.
class PacketOrder {
 public:
  struct Packet {
    int64_t ts;
    uint32_t rec;
    uint64_t i;
    bool operator>(const Packet& o) const { return ts != o.ts ? ts > o.ts : rec > o.rec; }
  };

  PacketOrder(const std::vector<FlowRecord>& records, uint32_t mtu)
      : records_(records), mtu_(mtu), order_(records.size()) {
    std::iota(order_.begin(), order_.end(), 0u);
    std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
      return records_[a].start_ns < records_[b].start_ns;
    });
  }

  // The next packet; false when every packet has been given.
  bool Next(Packet* out) {
    while (next_rec_ < order_.size() &&
           (heap_.empty() || records_[order_[next_rec_]].start_ns <= heap_.top().ts)) {
      heap_.push({records_[order_[next_rec_]].start_ns, order_[next_rec_], 0});
      ++next_rec_;
    }
    if (heap_.empty()) return false;
    *out = heap_.top();
    heap_.pop();
    const FlowRecord& r = records_[out->rec];
    const uint64_t n = PacketsOf(r, mtu_);
    if (out->i + 1 < n) heap_.push({PacketTime(r, out->i + 1, n), out->rec, out->i + 1});
    return true;
  }

 private:
  const std::vector<FlowRecord>& records_;
  uint32_t mtu_;
  std::vector<uint32_t> order_;
  size_t next_rec_ = 0;
  std::priority_queue<Packet, std::vector<Packet>, std::greater<>> heap_;
};

// The outer Ethernet + IPv4 + GRE + ERSPAN II/III headers wrapping `inner_bytes` of mirrored
// frame: sent by the exporter of the record's observation point to a collector, GRE with
// sequence numbers. Returns the bytes on the wire, outer headers included.
uint32_t WriteErspanHeaders(Writer* w, int erspan_type, const FlowRecord& r, int64_t ts,
                            uint32_t inner_bytes, uint32_t* gre_seq) {
  const uint32_t span_hdr = erspan_type == 2 ? 8 : 12;
  const uint32_t gre_bytes = 8 + span_hdr + inner_bytes;
  const uint32_t point = r.point == kNoPoint ? 0 : r.point;
  w->Mac(0xFE);
  w->Mac(static_cast<uint8_t>(point));
  w->U16(0x0800);
  IpHeader(w, IpAddr::FromV4(0xAC100000u | (point & 0xFFFF)) /* 172.16.x.y */,
           IpAddr::FromV4(0xAC1FFFFEu) /* 172.31.255.254 */, 47, gre_bytes);
  w->U16(0x1000);
  w->U16(erspan_type == 2 ? 0x88BE : 0x22EB);
  w->U32((*gre_seq)++);
  const uint16_t session = static_cast<uint16_t>(point & 0x3FF);
  if (erspan_type == 2) {
    w->U16(0x1000);  // version 1, VLAN 0
    w->U16(session);
    w->U32(0);
  } else {
    w->U16(0x2000);  // version 2, VLAN 0
    w->U16(session);
    w->U32(static_cast<uint32_t>(ts / 100));  // 100 ns ticks
    w->U16(0);  // SGT
    w->U16(0);  // P, FT = Ethernet, HW id, D, Gra, O = 0
  }
  return 14 + 20 + gre_bytes;
}

// The mirrored frame up to the RoCEv2 BTH: Ethernet, IP, UDP to port 4791, BTH with the
// segment's opcode, the record's QP and the next sequence number of `psn`.
void WriteRoceHeaders(Writer* w, const FlowRecord& r, const Segment& seg, uint32_t udp_bytes,
                      bool last, uint32_t* psn) {
  w->Mac(0x01);
  w->Mac(0x02);
  w->U16(r.src.is_v4() && r.dst.is_v4() ? 0x0800 : 0x86DD);
  IpHeader(w, r.src, r.dst, 17, udp_bytes);
  w->U16(r.src_port != 0 ? r.src_port : 49152);
  w->U16(kRocePort);
  w->U16(static_cast<uint16_t>(udp_bytes));
  w->U16(0);
  w->U8(seg.opcode);
  w->U8(0);
  w->U16(0xFFFF);
  w->U8(0);
  w->U24(r.qp & 0xFFFFFF);
  w->U8(last ? 0x80 : 0);  // AckReq on the last packet
  w->U24(*psn);
  *psn = (*psn + 1) & 0xFFFFFF;
}

}  // namespace

uint64_t PacketEmitter::PacketCount() const {
  const uint64_t mtu = std::max<uint32_t>(1, options_.mtu_payload_bytes);
  uint64_t n = 0;
  for (const FlowRecord& r : records_) n += std::max<uint64_t>(1, (r.bytes + mtu - 1) / mtu);
  return n;
}

Status PacketEmitter::Write(const std::string& path) const {
  PRISM_RETURN_IF_ERROR(CheckOptions(options_, PacketCount()));
  const uint32_t snaplen = std::clamp<uint32_t>(options_.snaplen, 64, 65535);
  std::unique_ptr<pcap_t, void (*)(pcap_t*)> dead(
      pcap_open_dead_with_tstamp_precision(DLT_EN10MB, static_cast<int>(snaplen),
                                           PCAP_TSTAMP_PRECISION_NANO),
      pcap_close);
  if (!dead) return MakeError(ErrorCode::kInternal, "pcap_open_dead failed");
  std::unique_ptr<pcap_dumper_t, void (*)(pcap_dumper_t*)> dump(
      pcap_dump_open(dead.get(), path.c_str()), pcap_dump_close);
  if (!dump) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: cannot open for writing: {}", path,
                     pcap_geterr(dead.get()));
  }

  const uint32_t mtu = options_.mtu_payload_bytes;
  PacketOrder packets(records_, mtu);
  std::unordered_map<uint64_t, uint32_t> psn;  // per (dst, qp): 24-bit packet sequence
  std::vector<uint8_t> frame(snaplen + 128);
  uint32_t gre_seq = 0;
  for (PacketOrder::Packet nx; packets.Next(&nx);) {
    const FlowRecord& r = records_[nx.rec];
    const uint64_t n = PacketsOf(r, mtu);
    const int64_t ts = PacketTime(r, nx.i, n);
    const Segment seg = SegmentOf(r.bytes, nx.i, n, mtu);
    const uint32_t udp_bytes = 8 + 12 + seg.ext_bytes + seg.payload + 4;
    const uint32_t inner_bytes = 14 + IpHeaderBytes(r.src, r.dst) + udp_bytes;
    uint32_t wire = inner_bytes;
    Writer w{frame.data()};
    if (options_.erspan_type != 0) {
      wire = WriteErspanHeaders(&w, options_.erspan_type, r, ts, inner_bytes, &gre_seq);
    }
    WriteRoceHeaders(&w, r, seg, udp_bytes, nx.i + 1 == n,
                     &psn[(uint64_t{r.dst.v4()} << 32) ^ r.qp ^ (uint64_t{r.src.v4()} << 24)]);
    // Only headers are written; the payload a snaplen reaches into is zeros.
    const size_t written = static_cast<size_t>(w.p - frame.data());
    const uint32_t caplen = std::min<uint32_t>(snaplen, wire);
    if (caplen > written) std::memset(frame.data() + written, 0, caplen - written);
    pcap_pkthdr hdr{};
    hdr.ts.tv_sec = ts / 1'000'000'000;
    hdr.ts.tv_usec = ts % 1'000'000'000;  // ns: the dumper was opened at ns precision
    hdr.caplen = caplen;
    hdr.len = wire;
    pcap_dump(reinterpret_cast<u_char*>(dump.get()), &hdr, frame.data());
  }
  if (pcap_dump_flush(dump.get()) != 0) {
    return MakeError(ErrorCode::kDataLoss, "{}: write failed", path);
  }
  return OkStatus();
}

}  // namespace prism::sim
