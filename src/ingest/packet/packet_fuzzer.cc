// File: ingest/packet/packet_fuzzer.cc
// libFuzzer target: the packet decoder chain (packet/dispatch.h) and the flow builder
// (pcap/packet_flow_builder.h) on arbitrary frames. Built and run by scripts/fuzz.sh with clang
// (-fsanitize=fuzzer,address,undefined); not part of the CMake build.
// Input: byte 0 picks the link type; then frames as [u16 length][u8 time step][bytes], so one
// input drives the builder's state (open messages, sweeps, eviction) across many packets.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/name_table.h"
#include "core/stats.h"
#include "ingest/packet/dispatch.h"
#include "ingest/pcap/packet_flow_builder.h"

namespace {
struct NullSink : prism::FlowSink {
  void OnRecord(const prism::FlowRecord& r) override {
    if (r.end_ns < r.start_ns && r.packets == 1) __builtin_trap();  // one packet: start == end
    ++n;
  }
  uint64_t n = 0;
};
constexpr uint32_t kLinks[] = {1, 101, 113, 276, 228, 229, 0};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint32_t link = kLinks[data[0] % (sizeof(kLinks) / sizeof(kLinks[0]))];
  prism::PointTable points;
  prism::Stats stats;
  NullSink sink;
  prism::ingest::PacketFlowOptions options;
  options.max_open_flows = 64;
  options.flowlet_gap_ns = 1000;
  options.roce_idle_timeout_ns = 5000;
  prism::ingest::PacketFlowBuilder builder(options, &sink, &points, &stats);
  size_t pos = 1;
  int64_t ts = 1'700'000'000'000'000'000;
  while (pos + 3 <= size) {
    size_t len = (size_t{data[pos]} << 8) | data[pos + 1];
    ts += int64_t{data[pos + 2]} * 97;
    pos += 3;
    if (len > size - pos) len = size - pos;
    prism::ingest::PacketMeta meta;
    meta.ts_ns = ts;
    meta.wire_len = static_cast<uint32_t>(len);
    std::span<const uint8_t> frame(data + pos, len);
    if (!prism::ingest::DecodePacket(link, frame, &meta)) builder.OnPacket(meta);
    pos += len;
  }
  builder.Finish();
  if (builder.open_flows() != 0) __builtin_trap();
  return 0;
}
