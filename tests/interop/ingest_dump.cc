// File: tests/interop/ingest_dump.cc
// Test driver for the interop tests: prints the FlowRecords our ingest path makes, as flow CSV on
// stdout, so scripts can compare them with a reference tool's decode.
//   ingest_dump pcap FILE [--flowlet-gap-us N]   capture -> records (packets or export datagrams)
//   ingest_dump ipfix FILE                       IPFIX file -> records
//   ingest_dump listen PORT_FILE QUIET_MS TOTAL_MS
//       UDP collector on 127.0.0.1, a free port written to PORT_FILE; stops QUIET_MS after the
//       last datagram (once one came) or after TOTAL_MS.
//   ingest_dump listen-sflow PORT_FILE QUIET_MS TOTAL_MS   the same for sFlow v5
//   ingest_dump sflow-samples FILE
//       every sFlow flow sample in a capture of sFlow datagrams, one line each after the decoder
//       chain: agent,src,dst,src_port,dst_port,proto,qp,sampling_rate,ip_bytes,frame_length
// Counters that are non-zero go to stderr as "stat NAME VALUE". Exit 2 on an error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "core/name_table.h"
#include "core/stats.h"
#include <pcap/pcap.h>

#include "ingest/ipfix/udp_collector.h"
#include "ingest/packet/dispatch.h"
#include "ingest/sflow/sflow_decoder.h"
#include "ingest/pcap/pcap_reader.h"
#include "io/flow_csv.h"
#include "io/ipfix_file.h"

namespace {

void PrintStats(const prism::Stats& stats) {
  for (size_t i = 0; i < stats.values().size(); ++i) {
    if (stats.values()[i] != 0) {
      fmt::print(stderr, "stat {} {}\n", prism::kStatInfo[i].name, stats.values()[i]);
    }
  }
}

int Usage() {
  fmt::print(stderr, "usage: ingest_dump pcap FILE [--flowlet-gap-us N] | ipfix FILE | "
                     "listen PORT_FILE QUIET_MS TOTAL_MS\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const std::string mode = argv[1];
  prism::PointTable points;
  prism::Stats stats;
  prism::io::FlowCsvWriter out(&std::cout, &points);
  if (mode == "pcap") {
    prism::ingest::PcapReadOptions options;
    if (argc == 5 && std::string(argv[3]) == "--flowlet-gap-us") {
      options.flows.flowlet_gap_ns = std::atoll(argv[4]) * 1000;
    }
    auto n = prism::ingest::ReadPcapFile(argv[2], options, &out, &points, &stats);
    out.Flush();
    PrintStats(stats);
    if (!n) {
      fmt::print(stderr, "{}\n", n.error().message);
      return 2;
    }
    return 0;
  }
  if (mode == "ipfix") {
    auto n = prism::io::ReadIpfixFile(argv[2], &out, &points, &stats);
    out.Flush();
    PrintStats(stats);
    return n ? 0 : 2;
  }
  if (mode == "sflow-samples") {
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* pcap = pcap_open_offline_with_tstamp_precision(argv[2], PCAP_TSTAMP_PRECISION_NANO,
                                                           err);
    if (pcap == nullptr) {
      fmt::print(stderr, "{}: {}\n", argv[2], err);
      return 2;
    }
    struct Discard : prism::FlowSink {
      void OnRecord(const prism::FlowRecord&) override {}
    } discard;
    prism::ingest::PacketFlowBuilder builder({}, &discard, &points, &stats);
    prism::ingest::SflowDecoder decoder(argv[2], &builder, &points, &stats);
    std::string agent;
    decoder.SetSampleObserver([&](const prism::ingest::PacketMeta& m,
                                  const prism::ingest::SflowRawHeader& h) {
      // The IP packet's total length: its payload per the IP header plus a header without
      // options (the simulator's packets have none).
      const uint32_t ip_bytes = m.l4_bytes + (m.src.is_v4() ? 20 : 40);
      fmt::print("{},{},{},{},{},{},{},{},{},{}\n", points.Name(m.agent_point), m.src.ToString(), m.dst.ToString(),
                 m.src_port, m.dst_port, m.proto, m.dest_qp, m.sampling_rate, ip_bytes,
                 h.frame_length);
    });
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    uint64_t packet = 0;
    while (pcap_next_ex(pcap, &hdr, &data) == 1) {
      prism::ingest::PacketMeta meta;
      meta.ts_ns = int64_t{hdr->ts.tv_sec} * 1'000'000'000 + hdr->ts.tv_usec;
      ++packet;
      if (prism::ingest::DecodePacket(static_cast<uint32_t>(pcap_datalink(pcap)),
                                      {data, hdr->caplen}, &meta)) {
        continue;
      }
      if (!decoder.OnCapturedDatagram(meta, packet)) stats.Add(prism::Stat::packet_other_proto);
    }
    pcap_close(pcap);
    decoder.Finish();
    PrintStats(stats);
    return 0;
  }
  if ((mode == "listen" || mode == "listen-sflow") && argc == 5) {
    prism::ingest::UdpCollectorOptions options;
    if (mode == "listen-sflow") options.protocol = prism::ingest::UdpProtocol::kSflow;
    auto c = prism::ingest::UdpCollector::Start(options, &out, &points);
    if (!c) {
      fmt::print(stderr, "{}\n", c.error().message);
      return 2;
    }
    {
      std::ofstream pf(argv[2]);
      pf << (*c)->port() << "\n";
    }
    const auto quiet = std::chrono::milliseconds(std::atoll(argv[3]));
    const auto total = std::chrono::milliseconds(std::atoll(argv[4]));
    const auto t0 = std::chrono::steady_clock::now();
    auto last = t0;
    bool any = false;
    for (;;) {
      auto now = std::chrono::steady_clock::now();
      if (now - t0 > total || (any && now - last > quiet)) break;
      if ((*c)->Drain(std::chrono::milliseconds(50), &stats) > 0) {
        any = true;
        last = std::chrono::steady_clock::now();
      }
    }
    (*c)->Stop();
    (*c)->Drain(std::chrono::milliseconds(0), &stats);
    out.Flush();
    PrintStats(stats);
    return 0;
  }
  return Usage();
}
