// File: tests/interop/ingest_dump.cc
// Test driver for the interop tests: prints the FlowRecords our ingest path makes, as flow CSV on
// stdout, so scripts can compare them with a reference tool's decode.
//   ingest_dump pcap FILE [--flowlet-gap-us N]   capture -> records (packets or export datagrams)
//   ingest_dump ipfix FILE                       IPFIX file -> records
//   ingest_dump listen PORT_FILE QUIET_MS TOTAL_MS
//       UDP collector on 127.0.0.1, a free port written to PORT_FILE; stops QUIET_MS after the
//       last datagram (once one came) or after TOTAL_MS.
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
#include "ingest/ipfix/udp_collector.h"
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
  if (mode == "listen" && argc == 5) {
    auto c = prism::ingest::UdpCollector::Start({}, &out, &points);
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
