// File: ingest/ipfix/export_decoder_fuzzer.cc
// libFuzzer target: the IPFIX / NetFlow v9 export decoder (ipfix/export_decoder.h) on arbitrary
// datagram sequences, with template state carried across them. Built and run by
// scripts/fuzz.sh with clang (-fsanitize=fuzzer,address,undefined); not part of the CMake build.
// Input: datagrams as [u16 length][u8 exporter][bytes].
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/name_table.h"
#include "core/stats.h"
#include "ingest/ipfix/export_decoder.h"

namespace {
struct CheckSink : prism::FlowSink {
  void OnRecord(const prism::FlowRecord& r) override {
    if (r.end_ns < r.start_ns || r.sampling_rate == 0) __builtin_trap();
  }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  prism::PointTable points;
  prism::Stats stats;
  CheckSink sink;
  prism::ingest::ExportDecoder decoder("fuzz", &sink, &points, &stats, /*problem_log_cap=*/0);
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
  return 0;
}
