// Decoding flow CSV, IPFIX and pcap from memory, in records per second (the file's bytes are in
// memory: this is the decoder, not the disk). The sink counts records, or for *ToTable fills a
// FlowTable as `analyze` does: through the column path (the table takes batches) or, for
// *RecordByRecord, a record at a time through the general path.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_data.h"
#include "flow/flow_table.h"
#include "ingest/pcap/pcap_reader.h"
#include "io/flow_csv.h"
#include "io/ipfix_file.h"
#include "sim/packet_emitter.h"

namespace prism::bench {
namespace {

class CountingSink : public FlowSink {
 public:
  void OnRecord(const FlowRecord& r) override { bytes_ += r.bytes; ++n_; }
  uint64_t n_ = 0, bytes_ = 0;
};

// The records and their points: seen at 8 switches, or at kManySwitches (scale-10k's fabric has
// 320 leaves and its spines: their names interleave record after record, as a collector of such
// a fabric receives them).
constexpr int kManySwitches = 400;
const std::vector<FlowRecord>& Records(PointTable** points, int switches = 8) {
  static PointTable few_pts, many_pts;
  static const std::vector<FlowRecord> few = RingJobRecords(8, 64, 50, &few_pts);
  static const std::vector<FlowRecord> many = RingJobRecords(8, 64, 50, &many_pts, kManySwitches);
  *points = switches == kManySwitches ? &many_pts : &few_pts;
  return switches == kManySwitches ? many : few;
}

void BM_DecodeCsv(benchmark::State& state) {
  PointTable* points;
  const auto& records = Records(&points);
  std::ostringstream out;
  {
    io::FlowCsvWriter w(&out, points);
    for (const FlowRecord& r : records) w.OnRecord(r);
  }
  const std::string data = out.str();
  for (auto _ : state) {
    CountingSink sink;
    PointTable pts;
    auto n = io::ReadFlowCsvBuffer(data, "bench.csv", &sink, &pts, nullptr);
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(records.size()));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(data.size()));
}
BENCHMARK(BM_DecodeCsv)->Unit(benchmark::kMillisecond);

std::string IpfixBytes(int switches) {
  PointTable* points;
  const auto& records = Records(&points, switches);
  std::ostringstream out;
  io::IpfixFileWriter w(&out, points);
  for (const FlowRecord& r : records) w.OnRecord(r);
  (void)w.Finish();
  return out.str();
}

// state.range(0): the switches the records are seen at (Records).
template <typename Sink>
void DecodeIpfix(benchmark::State& state) {
  PointTable* points;
  const int switches = int(state.range(0));
  const size_t n_records = Records(&points, switches).size();
  const std::string data = IpfixBytes(switches);
  for (auto _ : state) {
    Sink sink;
    PointTable pts;
    auto n = io::ReadIpfixBuffer(std::as_bytes(std::span(data.data(), data.size())), "bench.ipfix",
                                 &sink, &pts, nullptr);
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n_records));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(data.size()));
}
// A FlowTable behind a sink without a batch side: the decoder's general path, a FlowRecord and
// an OnRecord per record, as before the column path (ToTable).
class RecordByRecordTable : public FlowSink {
 public:
  void OnRecord(const FlowRecord& r) override { table_.OnRecord(r); }

 private:
  flow::FlowTable table_;
};

void BM_DecodeIpfix(benchmark::State& state) { DecodeIpfix<CountingSink>(state); }
void BM_DecodeIpfixToTable(benchmark::State& state) { DecodeIpfix<flow::FlowTable>(state); }
void BM_DecodeIpfixToTableRecordByRecord(benchmark::State& state) {
  DecodeIpfix<RecordByRecordTable>(state);
}
BENCHMARK(BM_DecodeIpfix)->Arg(8)->Arg(kManySwitches)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeIpfixToTable)->Arg(8)->Arg(kManySwitches)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeIpfixToTableRecordByRecord)->Arg(8)->Unit(benchmark::kMillisecond);

void BM_DecodePcap(benchmark::State& state) {
  PointTable* points;
  std::vector<FlowRecord> records = Records(&points);
  records.resize(20'000);
  for (FlowRecord& r : records) r.bytes = 16'000;  // 4 packets per RDMA WRITE message
  sim::PacketEmitter emitter({});
  for (const FlowRecord& r : records) emitter.OnRecord(r);
  char path[] = "/tmp/prism_bench_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    state.SkipWithError("mkstemp failed");
    return;
  }
  close(fd);
  const uint64_t packets = emitter.PacketCount();
  if (!emitter.Write(path)) {
    state.SkipWithError("cannot write the capture");
    return;
  }
  std::ifstream in(path, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path);
  uint64_t out_records = 0;
  for (auto _ : state) {
    CountingSink sink;
    PointTable pts;
    auto n = ingest::ReadPcapBuffer(std::as_bytes(std::span(data.data(), data.size())),
                                    "bench.pcap", {}, &sink, &pts, nullptr);
    out_records = sink.n_;
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(out_records));
  state.counters["packets_per_second"] =
      benchmark::Counter(double(state.iterations()) * double(packets), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(data.size()));
}
BENCHMARK(BM_DecodePcap)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace prism::bench

BENCHMARK_MAIN();
