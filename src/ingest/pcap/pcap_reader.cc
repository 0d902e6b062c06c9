#include "ingest/pcap/pcap_reader.h"

#include <pcap/pcap.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "ingest/ipfix/export_decoder.h"
#include "ingest/packet/dispatch.h"
#include "ingest/sflow/sflow_decoder.h"

namespace prism::ingest {
namespace {

struct PcapCloser {
  void operator()(pcap_t* p) const { pcap_close(p); }
};
using PcapHandle = std::unique_ptr<pcap_t, PcapCloser>;

StatusOr<uint64_t> ReadPcap(pcap_t* pcap, const std::string& name, const PcapReadOptions& options,
                            FlowSink* sink, PointTable* points, Stats* stats) {
  const int link = pcap_datalink(pcap);
  if (link < 0 || !IsSupportedLinkType(static_cast<uint32_t>(link))) {
    const char* link_name = pcap_datalink_val_to_name(link);
    return MakeError(ErrorCode::kInvalidArgument,
                     "{}: link type {} ({}) is not supported; expected Ethernet, raw IP or "
                     "Linux cooked capture",
                     name, link, link_name != nullptr ? link_name : "unknown");
  }
  const bool nano = pcap_get_tstamp_precision(pcap) == PCAP_TSTAMP_PRECISION_NANO;
  Stats local;
  Stats* st = stats != nullptr ? stats : &local;
  PacketFlowBuilder builder(options.flows, sink, points, st);
  ExportDecoder export_decoder(name, sink, points, st);
  // sFlow samples are packets: they share the capture's flow builder (their point is the agent).
  SflowDecoder sflow_decoder(name, &builder, points, st);
  if (options.sflow_counters) sflow_decoder.SetCounterObserver(options.sflow_counters);
  uint64_t packets = 0;
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  for (;;) {
    int rc = pcap_next_ex(pcap, &hdr, &data);
    if (rc == PCAP_ERROR_BREAK) break;  // end of file
    if (rc != 1) {
      st->Add(Stat::pcap_file_truncated);
      fmt::print(stderr, "{}: capture ends early after {} packets: {}\n", name, packets,
                 pcap_geterr(pcap));
      break;
    }
    ++packets;
    st->Add(Stat::pcap_packets);
    PacketMeta meta;
    meta.ts_ns = int64_t{hdr->ts.tv_sec} * 1'000'000'000 +
                 int64_t{hdr->ts.tv_usec} * (nano ? 1 : 1000);
    meta.wire_len = hdr->len;
    std::span<const uint8_t> frame(data, hdr->caplen);
    if (std::optional<Stat> skip = DecodePacket(static_cast<uint32_t>(link), frame, &meta)) {
      st->Add(*skip);
      continue;
    }
    if (meta.has_span) st->Add(Stat::erspan_packets);
    if (options.decode_export_packets && meta.proto == 17 && !meta.has_bth &&
        export_decoder.OnCapturedDatagram(meta)) {
      st->Add(Stat::pcap_export_packets);
      continue;
    }
    if (options.decode_export_packets && meta.proto == 17 && !meta.has_bth &&
        sflow_decoder.OnCapturedDatagram(meta, packets)) {
      st->Add(Stat::pcap_export_packets);
      continue;
    }
    builder.OnPacket(meta);
  }
  builder.Finish();
  export_decoder.Finish();
  sflow_decoder.Finish();
  const uint64_t records = builder.records() + export_decoder.records();
  if (records == 0 && !options.sflow_counters) {
    return MakeError(ErrorCode::kDataLoss,
                     "{}: no flow record from {} packets (no IP packet with payload decoded)", name,
                     packets);
  }
  return records;
}

}  // namespace

StatusOr<uint64_t> ReadPcapFile(const std::string& path, const PcapReadOptions& options,
                                FlowSink* sink, PointTable* points, Stats* stats) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return MakeError(ErrorCode::kNotFound, "{}: cannot open: {}", path, std::strerror(errno));
  }
  return ReadPcapStream(f, path, options, sink, points, stats);
}

StatusOr<uint64_t> ReadPcapStream(std::FILE* f, const std::string& name,
                                  const PcapReadOptions& options, FlowSink* sink,
                                  PointTable* points, Stats* stats) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  // pcap_fopen_* takes ownership of `f` on success only.
  PcapHandle pcap(pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf));
  if (!pcap) {
    std::fclose(f);
    return MakeError(ErrorCode::kDataLoss, "{}: not a readable pcap/pcapng capture: {}", name,
                     errbuf);
  }
  return ReadPcap(pcap.get(), name, options, sink, points, stats);
}

StatusOr<uint64_t> ReadPcapBuffer(std::span<const std::byte> data, const std::string& name,
                                  const PcapReadOptions& options, FlowSink* sink,
                                  PointTable* points, Stats* stats) {
  if (data.empty()) return MakeError(ErrorCode::kDataLoss, "{}: empty capture", name);
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  std::FILE* f = fmemopen(const_cast<std::byte*>(data.data()), data.size(), "rb");
  if (f == nullptr) return MakeError(ErrorCode::kInternal, "{}: fmemopen failed", name);
  PcapHandle pcap(pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf));
  if (!pcap) {
    std::fclose(f);
    return MakeError(ErrorCode::kDataLoss, "{}: not a readable pcap/pcapng capture: {}", name,
                     errbuf);
  }
  return ReadPcap(pcap.get(), name, options, sink, points, stats);
}

}  // namespace prism::ingest
