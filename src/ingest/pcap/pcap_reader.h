// File: ingest/pcap/pcap_reader.h
// Reads pcap and pcapng captures through libpcap (pcap_open_offline reads both, at ns precision)
// and turns them into FlowRecords: each frame goes through the decoder chain
// (packet/dispatch.h) into the PacketFlowBuilder (RoCE messages, TCP/UDP flowlets). UDP datagrams
// that are IPFIX or NetFlow v9 export packets are handed to the export decoder instead
// (ipfix/export_decoder.h), keyed by their exporter's address and port, so a capture taken at a
// collector reads like the collector's records.
// Bad packets are counted (packet_*, roce_* counters) and skipped; a capture cut inside a record
// counts pcap_file_truncated and keeps what came before. Unusable files are errors (kNotFound,
// kDataLoss with libpcap's message, kInvalidArgument for an unsupported link type).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"
#include "ingest/pcap/packet_flow_builder.h"
#include "ingest/sflow/sflow_decoder.h"

namespace prism::ingest {

struct PcapReadOptions {
  PacketFlowOptions flows;
  bool decode_export_packets = true;  // IPFIX / NetFlow v9 datagrams -> their flow records
  // When set, receives the sFlow datagrams' generic interface counters (counters mode reads a
  // capture for these alone), and a capture without a flow record is not an error.
  SflowDecoder::CounterObserver sflow_counters;
};

// Returns the number of records delivered (0 is an error: kDataLoss naming the file and the
// packet count, unless options.sflow_counters is set). Each record bumps records_read.
StatusOr<uint64_t> ReadPcapFile(const std::string& path, const PcapReadOptions& options,
                                FlowSink* sink, PointTable* points, Stats* stats);
// The same from an open stream (e.g. a decompressing one: pipeline/input_registry.h), which is
// closed in every case; `name` is used in messages.
StatusOr<uint64_t> ReadPcapStream(std::FILE* stream, const std::string& name,
                                  const PcapReadOptions& options, FlowSink* sink,
                                  PointTable* points, Stats* stats);
// The same from memory (tests, fuzzing); `name` is used in messages.
StatusOr<uint64_t> ReadPcapBuffer(std::span<const std::byte> data, const std::string& name,
                                  const PcapReadOptions& options, FlowSink* sink,
                                  PointTable* points, Stats* stats);

}  // namespace prism::ingest
