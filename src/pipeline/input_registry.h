// File: pipeline/input_registry.h
// Which reader turns an input file into flow records, in one place for `analyze` and `serve`
// (its watched directories): the kind is sniffed from the file's first (decompressed) bytes
// (io/input_kind.h), and each flow kind maps to one reader — flow CSV, IPFIX, pcap, pcapng.
// zstd is undone for every kind: the text and IPFIX readers stream through io::FileReader, and a
// compressed capture is handed to libpcap as a decompressing stream (libpcap itself reads only
// plain files). Inputs that are not flow records (topology or port-counter CSVs, raw NetFlow
// packets, empty or unknown files) get one message each, naming the file and what was expected.
// Sits after io and ingest, before the window pipeline and the apps.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"
#include "ingest/pcap/pcap_reader.h"
#include "io/input_kind.h"

namespace prism::pipeline {

// What the readers need besides the file.
struct ReadOptions {
  ingest::PcapReadOptions capture;  // captures: flowlet gap, RoCE idle timeout
};

struct ReadResult {
  io::InputKind kind = io::InputKind::kUnknown;
  uint64_t records = 0;
};

// Reads `path` (of the kind it was registered for) into `sink`; returns the records delivered.
using InputReader = std::function<StatusOr<uint64_t>(const std::string& path,
                                                     const ReadOptions& options, FlowSink* sink,
                                                     PointTable* points, Stats* stats)>;

class InputRegistry {
 public:
  // Every flow reader this build has (flow CSV, IPFIX, pcap, pcapng).
  static const InputRegistry& Default();

  void Register(io::InputKind kind, InputReader reader);
  bool Has(io::InputKind kind) const { return readers_.count(kind) != 0; }

  // Sniffs the kind of `path` and reads it with that kind's reader. The kind is reported even
  // when reading fails (`kind_out`, if not null). Errors name the file: kNotFound (cannot open),
  // kInvalidArgument (a known kind that is not flow records), kDataLoss (empty, unknown or
  // unreadable), or the reader's own error.
  StatusOr<ReadResult> Read(const std::string& path, const ReadOptions& options, FlowSink* sink,
                            PointTable* points, Stats* stats,
                            io::InputKind* kind_out = nullptr) const;

 private:
  std::map<io::InputKind, InputReader> readers_;
};

// The message for an input that is not flow records (or an error if `kind` has a reader).
Error NotFlowRecords(const std::string& path, io::InputKind kind, const std::string& head);

}  // namespace prism::pipeline
