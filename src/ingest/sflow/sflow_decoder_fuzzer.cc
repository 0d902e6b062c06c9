// File: ingest/sflow/sflow_decoder_fuzzer.cc
// libFuzzer target: the sFlow v5 decoder (sflow/sflow_decoder.h) with its packet decoder chain
// and flow builder, on arbitrary datagram sequences (loss tracking and open flowlets carried
// across them). Built and run by scripts/fuzz.sh with clang (-fsanitize=fuzzer,address,undefined);
// not part of the CMake build. Input: datagrams as [u16 length][u8 flags][bytes]; flags bit 0
// sends the datagram through the capture-side check (LooksLikeSflowDatagram) first.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/name_table.h"
#include "core/stats.h"
#include "ingest/pcap/packet_flow_builder.h"
#include "ingest/sflow/sflow_decoder.h"

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
  prism::ingest::PacketFlowOptions options;
  options.max_open_flows = 64;  // exercise eviction
  prism::ingest::PacketFlowBuilder builder(options, &sink, &points, &stats);
  prism::ingest::SflowDecoder decoder("fuzz", &builder, &points, &stats, /*problem_log_cap=*/0);
  size_t pos = 0;
  int64_t ts_ns = 1'700'000'000'000'000'000;
  while (pos + 3 <= size) {
    size_t len = (size_t{data[pos]} << 8) | data[pos + 1];
    const uint8_t flags = data[pos + 2];
    pos += 3;
    if (len > size - pos) len = size - pos;
    std::span<const uint8_t> msg(data + pos, len);
    ts_ns += int64_t{flags} * 100'000;
    if (!(flags & 1) || prism::ingest::LooksLikeSflowDatagram(msg, msg.size())) {
      decoder.DecodeDatagram(msg, ts_ns, pos);
    }
    pos += len;
  }
  builder.Finish();
  decoder.Finish();
  return 0;
}
