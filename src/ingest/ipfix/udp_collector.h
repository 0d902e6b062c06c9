// File: ingest/ipfix/udp_collector.h
// A live IPFIX / NetFlow v9 collector on a UDP socket, for `serve` and the interop tests. A
// receiver thread reads datagrams into a bounded queue (datagrams beyond it are dropped and
// counted: collector_datagrams_dropped); the owner drains the queue on its own thread through
// one ExportDecoder, so templates persist across drains and FlowSink / Stats need no locking.
// Each datagram is decoded as from exporter (source address, source port), whose address is the
// records' observation point unless they carry their own. Templates expire by the time their
// datagrams were received (UdpCollectorOptions::templates).
// With UdpProtocol::kSflow the same socket, queue and allow-list feed an sFlow v5 decoder
// (sflow/sflow_decoder.h) instead: its samples are packets seen at the wall-clock time their
// datagram was received, built into flowlets by a PacketFlowBuilder that Drain advances to the
// present, so a flowlet ends when its stream goes quiet, not only when the next sample comes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <condition_variable>
#include <string>
#include <thread>
#include <vector>

#include "core/flow_record.h"
#include "core/ip_addr.h"
#include "core/ip_prefix.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"
#include "ingest/ipfix/export_decoder.h"
#include "ingest/pcap/packet_flow_builder.h"
#include "ingest/sflow/sflow_decoder.h"

namespace prism::ingest {

enum class UdpProtocol { kIpfix, kSflow };  // kIpfix: IPFIX and NetFlow v9

struct UdpCollectorOptions {
  UdpProtocol protocol = UdpProtocol::kIpfix;
  // kSflow: how sampled packets become flowlets (gaps; capture_point is not used: the agent is).
  PacketFlowOptions sflow_flows;
  std::string bind_address = "127.0.0.1";  // IPv4 or IPv6 literal
  uint16_t port = 0;                       // 0 = any free port (see port())
  size_t max_queued_datagrams = 4096;      // bounded memory: at most this many x 64 KiB
  // The kernel's receive buffer for the socket, which absorbs bursts while the receiver thread
  // waits for a CPU. Asked with SO_RCVBUFFORCE where the process may (CAP_NET_ADMIN), otherwise
  // with SO_RCVBUF, which net.core.rmem_max caps: receive_buffer_bytes() says what was granted.
  int receive_buffer_bytes = 8 << 20;
  // Template cache bounds and the UDP template lifetime (RFC 7011 §8.4): templates not resent
  // for 30 minutes of receive time expire.
  TemplateLimits templates{.timeout_ns = kUdpTemplateTimeoutNs};
  // Called on the draining thread with each datagram just before its records are decoded (e.g.
  // to read the export time the records are checked against).
  std::function<void(std::span<const uint8_t>)> on_datagram;
  // Exporters whose datagrams are decoded; empty = any. Datagrams from other addresses are
  // refused unread (counted: datagrams_refused()), so a stray or misconfigured exporter cannot
  // reach the decoder, its template cache or the windows.
  std::vector<IpPrefix> allowed_sources;
};

class UdpCollector {
 public:
  // Binds and starts the receiver thread. kInvalidArgument for a bad address, kInternal when
  // the socket cannot be bound.
  static StatusOr<std::unique_ptr<UdpCollector>> Start(const UdpCollectorOptions& options,
                                                       FlowSink* sink, PointTable* points);
  ~UdpCollector();
  UdpCollector(const UdpCollector&) = delete;
  UdpCollector& operator=(const UdpCollector&) = delete;

  uint16_t port() const { return port_; }
  // The receive buffer the kernel granted (bytes of payload; see receive_buffer_bytes above).
  int receive_buffer_bytes() const { return receive_buffer_bytes_; }

  // Waits up to `wait` for a datagram, then decodes every queued one into the sink (counting
  // into `stats`, which may be null). Returns the number of datagrams decoded.
  size_t Drain(std::chrono::milliseconds wait, Stats* stats);
  // Stops the receiver thread (queued datagrams stay for a last Drain, which with kSflow also
  // closes the flowlets still open).
  void Stop();

  uint64_t records() const {
    if (sflow_packets_) return sflow_packets_->records();
    return decoder_ ? decoder_->records() : 0;
  }
  uint64_t datagrams_received() const { return received_.load(); }
  // Datagrams from sources outside UdpCollectorOptions::allowed_sources (not in received).
  uint64_t datagrams_refused() const { return refused_.load(); }

 private:
  struct Datagram {
    IpAddr from;
    uint16_t port;
    int64_t received_ns;  // steady clock: template expiry
    int64_t received_wall_ns;  // system clock: the time of sFlow samples
    std::vector<uint8_t> data;
  };
  UdpCollector() = default;
  void Receive();

  int fd_ = -1;
  uint16_t port_ = 0;
  int receive_buffer_bytes_ = 0;
  size_t max_queued_ = 0;
  std::function<void(std::span<const uint8_t>)> on_datagram_;
  std::vector<IpPrefix> allowed_;
  std::atomic<uint64_t> refused_{0};
  FlowSink* sink_ = nullptr;
  PointTable* points_ = nullptr;
  std::unique_ptr<ExportDecoder> decoder_;
  std::unique_ptr<PacketFlowBuilder> sflow_packets_;  // kSflow (then decoder_ is null)
  std::unique_ptr<SflowDecoder> sflow_;
  Stats decoder_stats_;  // the decoder counts here; Drain moves the counts to the caller's
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> received_{0};
  std::atomic<uint64_t> dropped_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Datagram> queue_;
};

}  // namespace prism::ingest
