#include "service/live_capture.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "ingest/ipfix/export_decoder.h"
#include "ingest/packet/dispatch.h"

namespace prism::service {

StatusOr<std::unique_ptr<LiveCapture>> LiveCapture::Open(const LiveCaptureOptions& options) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  const std::string& dev = options.interface;
  pcap_t* p = pcap_create(dev.c_str(), errbuf);
  if (p == nullptr) {
    return MakeError(ErrorCode::kNotFound, "--capture {}: {}", dev, errbuf);
  }
  auto fail = [&](ErrorCode code, const std::string& what) -> StatusOr<std::unique_ptr<LiveCapture>> {
    std::string msg = fmt::format("--capture {}: {}", dev, what);
    pcap_close(p);
    return MakeError(code, "{}", msg);
  };
  pcap_set_snaplen(p, std::max(64, options.snaplen));
  pcap_set_promisc(p, 0);
  pcap_set_immediate_mode(p, 1);
  pcap_set_timeout(p, std::max(1, options.timeout_ms));
  pcap_set_buffer_size(p, std::max(1 << 16, options.buffer_bytes));
  pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO);  // falls back to us if unsupported
  const int rc = pcap_activate(p);
  if (rc < 0) {
    const ErrorCode code = rc == PCAP_ERROR_NO_SUCH_DEVICE ? ErrorCode::kNotFound
                                                           : ErrorCode::kInternal;
    // pcap_geterr holds the detailed message for these codes; else the generic one.
    const char* detail = pcap_geterr(p);
    return fail(code, detail != nullptr && *detail != '\0' ? std::string(detail)
                                                           : std::string(pcap_statustostr(rc)));
  }
  if (rc > 0) {
    fmt::print(stderr, "llmprism serve: --capture {}: warning: {}\n", dev, pcap_statustostr(rc));
  }
  const int link = pcap_datalink(p);
  if (link < 0 || !ingest::IsSupportedLinkType(static_cast<uint32_t>(link))) {
    const char* name = pcap_datalink_val_to_name(link);
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("link type {} ({}) is not supported; expected Ethernet, raw IP or "
                            "Linux cooked capture",
                            link, name != nullptr ? name : "unknown"));
  }
  if (!options.filter.empty()) {
    bpf_program prog{};
    if (pcap_compile(p, &prog, options.filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--capture-filter '{}': {}", options.filter, pcap_geterr(p)));
    }
    const int frc = pcap_setfilter(p, &prog);
    pcap_freecode(&prog);
    if (frc != 0) {
      return fail(ErrorCode::kInternal,
                  fmt::format("--capture-filter '{}': {}", options.filter, pcap_geterr(p)));
    }
  }
  auto cap = std::unique_ptr<LiveCapture>(new LiveCapture(p, options));
  cap->link_ = link;
  cap->nano_ = pcap_get_tstamp_precision(p) == PCAP_TSTAMP_PRECISION_NANO;
  return cap;
}

LiveCapture::LiveCapture(pcap_t* p, const LiveCaptureOptions& options)
    : pcap_(p), options_(options) {}

LiveCapture::~LiveCapture() {
  if (pcap_ != nullptr) pcap_close(pcap_);
}

void LiveCapture::Break() { pcap_breakloop(pcap_); }

struct LiveCapture::Loop {
  LiveCapture* self;
  Stats* stats;
  ingest::PacketFlowBuilder* builder;
  ingest::ExportDecoder* exports;
  bool got_packet = false;

  static void OnPacket(u_char* user, const pcap_pkthdr* hdr, const u_char* data) {
    auto* l = reinterpret_cast<Loop*>(user);
    l->got_packet = true;
    l->self->packets_.fetch_add(1, std::memory_order_relaxed);
    l->stats->Add(Stat::pcap_packets);
    ingest::PacketMeta meta;
    meta.ts_ns = int64_t{hdr->ts.tv_sec} * 1'000'000'000 +
                 int64_t{hdr->ts.tv_usec} * (l->self->nano_ ? 1 : 1000);
    meta.wire_len = hdr->len;
    std::span<const uint8_t> frame(data, hdr->caplen);
    if (std::optional<Stat> skip =
            ingest::DecodePacket(static_cast<uint32_t>(l->self->link_), frame, &meta)) {
      l->stats->Add(*skip);
      return;
    }
    if (meta.has_span) l->stats->Add(Stat::erspan_packets);
    if (meta.proto == 17 && !meta.has_bth && l->exports->OnCapturedDatagram(meta)) {
      l->stats->Add(Stat::pcap_export_packets);
      return;
    }
    l->builder->OnPacket(meta);
  }
};

Status LiveCapture::Run(FlowSink* sink, PointTable* points, const std::atomic<bool>* stop,
                        const Tick& tick) {
  Stats stats;
  ingest::PacketFlowBuilder builder(options_.flows, sink, points, &stats);
  ingest::ExportDecoder exports("capture:" + options_.interface, sink, points, &stats);
  Loop loop{this, &stats, &builder, &exports};
  // Open flows are closed once no packet came for longer than every builder timeout (the builder
  // only sweeps when packet time advances).
  const auto idle_close = std::chrono::nanoseconds(
      std::max(options_.flows.roce_idle_timeout_ns, options_.flows.flowlet_gap_ns));
  auto last_packet = std::chrono::steady_clock::now();
  auto update_drops = [&] {
    pcap_stat ps{};
    if (pcap_stats(pcap_, &ps) == 0) kernel_drops_ = uint64_t{ps.ps_drop} + ps.ps_ifdrop;
  };
  Status result = OkStatus();
  while (!stop->load()) {
    loop.got_packet = false;
    const int n = pcap_dispatch(pcap_, 4096, &Loop::OnPacket, reinterpret_cast<u_char*>(&loop));
    if (n == PCAP_ERROR_BREAK) break;
    if (n < 0) {
      result = MakeError(ErrorCode::kInternal, "--capture {}: {}", options_.interface,
                         pcap_geterr(pcap_));
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (loop.got_packet) {
      last_packet = now;
    } else if (builder.open_flows() > 0 && now - last_packet > idle_close) {
      builder.Finish();
    }
    update_drops();
    tick(stats);
    stats = Stats();
  }
  builder.Finish();
  exports.Finish();
  update_drops();
  tick(stats);
  return result;
}

}  // namespace prism::service
