// File: ingest/ipfix/export_decoder_fuzzer.cc
// libFuzzer target: the IPFIX / NetFlow v9 export decoder (ipfix/export_decoder.h) on arbitrary
// datagram sequences, with template state carried across them. Built and run by
// scripts/fuzz.sh with clang (-fsanitize=fuzzer,address,undefined); not part of the CMake build.
// Input: datagrams as [u16 length][u8 exporter][bytes]. Decoded twice, into a sink that takes
// batches (the column path, planned_records.h) and into one that does not (the general path):
// the two must deliver the same rows and counters.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/name_table.h"
#include "core/record_batch.h"
#include "core/stats.h"
#include "ingest/ipfix/export_decoder.h"

namespace {
// What the FlowTable keeps of a record.
struct Row {
  int64_t start_ns, end_ns;
  prism::IpAddr src, dst;
  uint64_t bytes;
  uint32_t qp, sampling_rate;
  prism::PointId point;
  bool operator==(const Row&) const = default;
};

struct CheckSink : prism::FlowSink, prism::BatchSink {
  explicit CheckSink(bool batches) : batches(batches) {}
  void OnRecord(const prism::FlowRecord& r) override {
    if (r.end_ns < r.start_ns || r.sampling_rate == 0) __builtin_trap();
    rows.push_back({r.start_ns, r.end_ns, r.src, r.dst, r.bytes, r.qp, r.sampling_rate, r.point});
  }
  bool TakesBatches() const override { return batches; }
  void OnBatch(prism::RecordBatch* b) override {
    for (size_t i = 0; i < b->size; ++i) {
      if (b->end_ns[i] < b->start_ns[i] || b->sampling_rate[i] == 0) __builtin_trap();
      rows.push_back({b->start_ns[i], b->end_ns[i], b->src[i], b->dst[i], b->bytes[i], b->qp[i],
                      b->sampling_rate[i], b->point[i]});
    }
  }
  bool batches;
  std::vector<Row> rows;
};

struct Run {
  explicit Run(bool batches)
      : sink(batches), decoder("fuzz", &sink, &points, &stats, /*problem_log_cap=*/0) {}
  prism::PointTable points;
  prism::Stats stats;
  CheckSink sink;
  prism::ingest::ExportDecoder decoder;
};

void Feed(const uint8_t* data, size_t size, Run* run) {
  prism::ingest::ExportDecoder& decoder = run->decoder;
  const uint32_t exporters[2] = {
      decoder.AddExporter(prism::IpAddr::FromV4(0x7F000001), 1, "a"),
      decoder.AddExporter(prism::IpAddr::FromV4(0x7F000002), 2, "")};
  size_t pos = 0;
  while (pos + 3 <= size) {
    size_t len = (size_t{data[pos]} << 8) | data[pos + 1];
    const uint32_t ex = exporters[data[pos + 2] & 1];
    pos += 3;
    if (len > size - pos) len = size - pos;
    std::span<const uint8_t> msg(data + pos, len);
    // Both entry points: as a framed datagram, and through the capture-side check.
    if (prism::ingest::LooksLikeExportDatagram(msg, msg.size()) || (data[pos - 1] & 2)) {
      decoder.DecodeMessage(msg, ex, pos);
    }
    pos += len;
  }
  decoder.Finish();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Run general(false), columns(true);
  Feed(data, size, &general);
  Feed(data, size, &columns);
  if (general.sink.rows != columns.sink.rows || general.stats.values() != columns.stats.values() ||
      general.points.size() != columns.points.size()) {
    __builtin_trap();
  }
  return 0;
}
