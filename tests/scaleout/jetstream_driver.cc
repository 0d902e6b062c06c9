// Test driver for tests/scaleout/jetstream.sh: one side of the collector -> analyser hand-off
// over NATS JetStream, as the two roles will run it, with what each step returned on stdout.
//
//   jetstream_driver publish URL BATCHES RECORDS   publishes BATCHES record batches of RECORDS
//       records (message ids batch-0..), then batch-3 again, which the stream must keep once
//   jetstream_driver consume URL N ACK RECORDS STATE   fetches up to N batches of durable
//       consumer "analyser" as an analyser does: a batch whose stream sequence is in STATE (the
//       sequences it has committed, one per line) was committed before and is acknowledged
//       unread; of the others, the first ACK are checked record by record against what publish
//       made, committed (appended to STATE and flushed) and only then acknowledged; the rest are
//       left unacknowledged. One line per batch: seq, batch index, deliveries, acked, skipped.
//   jetstream_driver garbage URL SUBJECT ID        publishes one message that is no record batch
// Exit 1 with the error on stderr when a step fails.
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>

#include "scaleout/jetstream.h"
#include "scaleout/record_batch.h"

namespace {

using prism::FlowRecord;
namespace so = prism::scaleout;

constexpr char kStream[] = "LLMPRISM_RECORDS";
constexpr char kSubject[] = "records.collector1";

FlowRecord Record(int batch, int i) {
  FlowRecord r;
  r.start_ns = 1'700'000'000'000'000'000 + int64_t(batch) * 1'000'000'000 + int64_t(i) * 1'000;
  r.end_ns = r.start_ns + 500 + i % 7;
  r.src = prism::IpAddr::FromV4(0x0A000000 + uint32_t(i % 64));
  r.dst = prism::IpAddr::FromV4(0x0A000100 + uint32_t((i * 7) % 64));
  r.dst_port = 4791;
  r.proto = 17;
  r.qp = uint32_t(batch * 100'000 + i);
  r.bytes = uint64_t(1024) * (1 + i % 16);
  r.packets = 1 + i % 4;
  return r;
}

int Fail(const prism::Error& e) {
  fmt::print(stderr, "jetstream_driver: {}\n", e.message);
  return 1;
}

int Publish(so::JetStream& js, int batches, int records) {
  for (int b = 0; b <= batches; ++b) {
    const int index = b < batches ? b : 3;  // the last one repeats batch 3: a collector's retry
    so::RecordBatchWriter w;
    for (int i = 0; i < records; ++i) w.Add(Record(index, i), fmt::format("leaf{}", i % 4));
    const std::string bytes = w.Finish();
    auto ack = js.Publish(kSubject, {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                          fmt::format("batch-{}", index));
    if (!ack) return Fail(ack.error());
    fmt::print("published batch {} seq {} duplicate {} bytes {}\n", index, ack->sequence,
               ack->duplicate ? 1 : 0, bytes.size());
  }
  return 0;
}

// The batch index a decoded batch carries (its qps), after checking every record.
int CheckBatch(const so::RecordBatch& batch, int records) {
  if (batch.records.size() != size_t(records) || batch.point_names.size() != 4) return -1;
  const int index = int(batch.records[0].qp / 100'000);
  for (int i = 0; i < records; ++i) {
    const FlowRecord want = Record(index, i);
    const FlowRecord& got = batch.records[size_t(i)];
    if (got.start_ns != want.start_ns || got.end_ns != want.end_ns || got.src != want.src ||
        got.dst != want.dst || got.qp != want.qp || got.bytes != want.bytes ||
        got.packets != want.packets || batch.point_names[got.point] != fmt::format("leaf{}", i % 4))
      return -1;
  }
  return index;
}

int Consume(so::JetStream& js, int n, int ack, int records, const std::string& state) {
  std::set<uint64_t> committed;
  {
    std::ifstream in(state);
    for (uint64_t seq; in >> seq;) committed.insert(seq);
  }
  auto consumer = js.Consume(kStream, kSubject, "analyser", std::chrono::seconds(2));
  if (!consumer) return Fail(consumer.error());
  auto messages = (*consumer)->Fetch(n, std::chrono::seconds(3));
  if (!messages) return Fail(messages.error());
  int acked = 0;
  for (so::DeliveredMessage& m : *messages) {
    auto batch = so::DecodeRecordBatch(m.data());
    if (!batch) return Fail(batch.error());
    const int index = CheckBatch(*batch, records);
    if (index < 0) {
      fmt::print(stderr, "jetstream_driver: seq {}: records differ from what was published\n",
                 m.stream_sequence());
      return 1;
    }
    const bool skipped = committed.contains(m.stream_sequence());
    const bool do_ack = skipped || acked < ack;
    if (do_ack && !skipped) {
      std::ofstream out(state, std::ios::app);
      out << m.stream_sequence() << "\n";
      out.flush();
      if (!out) {
        fmt::print(stderr, "jetstream_driver: cannot commit to {}\n", state);
        return 1;
      }
      ++acked;
    }
    if (do_ack) {
      if (auto st = m.Ack(); !st) return Fail(st.error());
    }
    fmt::print("seq {} batch {} deliveries {} acked {} skipped {}\n", m.stream_sequence(), index,
               m.deliveries(), do_ack ? 1 : 0, skipped ? 1 : 0);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 7) {
    fmt::print(stderr, "usage: jetstream_driver publish URL BATCHES RECORDS | "
                       "consume URL N ACK RECORDS STATE | garbage URL SUBJECT ID\n");
    return 2;
  }
  const std::string mode = argv[1];
  auto js = so::JetStream::Connect(argv[2], std::chrono::seconds(5));
  if (!js) return Fail(js.error());
  if (auto st = (*js)->EnsureStream({kStream, {"records.>"}, 1}); !st) return Fail(st.error());
  if (mode == "publish" && argc == 5) return Publish(**js, std::stoi(argv[3]), std::stoi(argv[4]));
  if (mode == "garbage" && argc == 5) {
    const std::string junk = "LPRB\x01 not a record batch";
    auto ack = (*js)->Publish(argv[3], {reinterpret_cast<const uint8_t*>(junk.data()), junk.size()},
                              argv[4]);
    if (!ack) return Fail(ack.error());
    fmt::print("published garbage seq {}\n", ack->sequence);
    return 0;
  }
  if (mode == "consume" && argc == 7)
    return Consume(**js, std::stoi(argv[3]), std::stoi(argv[4]), std::stoi(argv[5]), argv[6]);
  fmt::print(stderr, "jetstream_driver: unknown mode {}\n", mode);
  return 2;
}
