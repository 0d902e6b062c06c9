// File: io/flow_csv.h
// Flow CSV, the simplest input and output of llmprism (docs/design.md, Flow CSV): a header line,
// columns in any order, unknown columns ignored. Required: src, dst (IPv4/IPv6), start_ns, end_ns
// (Unix epoch ns), bytes. Optional: packets (default 0), src_port, dst_port, proto, qp (default 0),
// sampling_rate (default 1), switch (observation point; empty or absent -> kNoPoint).
// Readers feed a FlowSink; FlowCsvWriter is a FlowSink, so any source converts to CSV.
// zstd-compressed files are read transparently.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"

namespace prism::io {

// Reads a flow CSV and delivers each good row to sink->OnRecord (switch names interned in
// `points`). A bad row is counted (csv_bad_row: field count or unparsable field; csv_bad_time:
// end_ns < start_ns) and skipped; the first 5 are described on stderr as
// "FILE:LINE: expected ..., got ...", then the number of further ones. Good rows bump records_read.
// Errors: kNotFound (cannot open), kDataLoss (empty file, header lacks a required column, no
// usable row). Returns the number of records delivered. `stats` may be null.
StatusOr<uint64_t> ReadFlowCsv(const std::string& path, FlowSink* sink, PointTable* points,
                               Stats* stats);
// Same, from an in-memory buffer; `name` stands for the file in messages.
StatusOr<uint64_t> ReadFlowCsvBuffer(std::string_view data, const std::string& name, FlowSink* sink,
                                     PointTable* points, Stats* stats);

// The column order FlowCsvWriter writes (and the canonical order for tools writing flow CSV).
inline constexpr std::string_view kFlowCsvHeader =
    "src,dst,start_ns,end_ns,bytes,packets,src_port,dst_port,proto,qp,sampling_rate,switch";

// Writes records as flow CSV with header kFlowCsvHeader; the switch column holds the point's name
// (empty for kNoPoint). Output is buffered: call Flush() before reading the stream (the destructor
// flushes too, so the stream must outlive the writer).
class FlowCsvWriter : public FlowSink {
 public:
  FlowCsvWriter(std::ostream* out, const PointTable* points);  // writes the header immediately
  ~FlowCsvWriter() override;
  FlowCsvWriter(const FlowCsvWriter&) = delete;
  FlowCsvWriter& operator=(const FlowCsvWriter&) = delete;

  void OnRecord(const FlowRecord& r) override;
  void Flush();

 private:
  std::ostream* out_;
  const PointTable* points_;
  fmt::memory_buffer buf_;
};

}  // namespace prism::io
