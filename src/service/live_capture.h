// File: service/live_capture.h
// Live packet capture for `llmprism serve --capture IFACE [--capture-filter BPF]`: opens an
// interface with libpcap (pcap_create / pcap_activate: small snaplen, immediate mode, bounded
// kernel buffer, ns timestamps when the kernel gives them) and runs every frame through the same
// chain as the pcap file reader (ingest/pcap/pcap_reader.h): packet/dispatch.h decoders, then the
// PacketFlowBuilder (RoCEv2 messages, TCP/UDP flowlets, ERSPAN points), or the ExportDecoder for
// IPFIX / NetFlow v9 datagrams seen on the wire. Run() loops until Break() (pcap_breakloop, also
// safe from another thread) or the stop flag; it hands batches to the caller's callback between
// dispatches. When no packet arrived for longer than the builder's timeouts, open flows are
// closed (the builder sweeps only when packets advance its clock).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"
#include "ingest/pcap/packet_flow_builder.h"

typedef struct pcap pcap_t;

namespace prism::service {

struct LiveCaptureOptions {
  std::string interface;
  std::string filter;                   // BPF; empty = everything
  int snaplen = 256;                    // headers only: lengths come from header fields
  int buffer_bytes = 8 << 20;           // kernel ring buffer (bounded)
  int timeout_ms = 100;                 // poll timeout: how often Run() checks stop / flushes
  ingest::PacketFlowOptions flows;
};

class LiveCapture {
 public:
  // Opens and activates the interface and installs the filter. Errors: kNotFound / kInternal
  // with libpcap's message (no such device, permission denied, bad filter).
  static StatusOr<std::unique_ptr<LiveCapture>> Open(const LiveCaptureOptions& options);
  ~LiveCapture();
  LiveCapture(const LiveCapture&) = delete;
  LiveCapture& operator=(const LiveCapture&) = delete;

  // Called after every dispatch round (at most `timeout_ms` apart) with the stats gathered since
  // the previous call; the records went to `sink` meanwhile.
  using Tick = std::function<void(const Stats& delta)>;
  // Captures until Break() or `*stop`. Records go to `sink` (points interned in `points`).
  // Returns an error when the capture fails (interface gone); Break/stop is not an error.
  Status Run(FlowSink* sink, PointTable* points, const std::atomic<bool>* stop, const Tick& tick);
  // pcap_breakloop: Run() returns soon (thread-safe).
  void Break();

  uint64_t packets() const { return packets_.load(); }
  // Kernel drops (pcap_stats ps_drop + ps_ifdrop), updated by Run().
  uint64_t kernel_drops() const { return kernel_drops_.load(); }
  int link_type() const { return link_; }

 private:
  LiveCapture(pcap_t* p, const LiveCaptureOptions& options);
  struct Loop;
  pcap_t* pcap_;
  LiveCaptureOptions options_;
  int link_ = 0;
  bool nano_ = false;
  std::atomic<uint64_t> packets_{0};
  std::atomic<uint64_t> kernel_drops_{0};
};

}  // namespace prism::service
