#include "scaleout/record_stream.h"

#include <unistd.h>

#include <functional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace prism::scaleout {

BatchPublisher::BatchPublisher(JetStream* js, std::string subject, std::string id_prefix,
                               const PointTable* points, size_t batch_records)
    : js_(js), subject_(std::move(subject)), id_prefix_(std::move(id_prefix)), points_(points),
      batch_records_(std::max<size_t>(1, batch_records)) {}

void BatchPublisher::OnRecord(const FlowRecord& record) {
  writer_.Add(record, record.point == kNoPoint || record.point >= points_->size()
                          ? std::string_view()
                          : std::string_view(points_->Name(record.point)));
  ++records_;
  if (writer_.size() >= batch_records_) {
    Seal();
    // Publish now while the stream takes them; when it does not, they wait for Flush.
    if (held_.size() == 1) (void)PublishHeld();
  }
}

void BatchPublisher::Seal() {
  if (writer_.size() == 0) return;
  Held h;
  h.records = writer_.size();
  h.bytes = writer_.Finish();
  h.id = fmt::format("{}-{}-{:016x}", id_prefix_, sealed_++,
                     std::hash<std::string_view>()(h.bytes));
  held_.push_back(std::move(h));
}

Status BatchPublisher::PublishHeld() {
  while (!held_.empty()) {
    const Held& h = held_.front();
    auto ack = js_->Publish(
        subject_, {reinterpret_cast<const uint8_t*>(h.bytes.data()), h.bytes.size()}, h.id);
    if (!ack) {
      ++errors_;
      return std::unexpected(ack.error());
    }
    ++batches_;
    published_records_ += h.records;
    if (ack->duplicate) ++duplicates_;
    held_.pop_front();
  }
  return OkStatus();
}

Status BatchPublisher::Flush() {
  Seal();
  return PublishHeld();
}

uint64_t BatchPublisher::held_records() const {
  uint64_t n = writer_.size();
  for (const Held& h : held_) n += h.records;
  return n;
}

StatusOr<StreamAddress> ParseStreamAddress(const std::string& url) {
  constexpr std::string_view kScheme = "nats://";
  if (!url.starts_with(kScheme))
    return MakeError(ErrorCode::kInvalidArgument,
                     "{}: expected nats://HOST:PORT[/STREAM[/SUBJECT]]",
                     url);
  StreamAddress a;
  const size_t slash = url.find('/', kScheme.size());
  a.server = url.substr(0, slash);
  if (a.server.size() == kScheme.size())
    return MakeError(ErrorCode::kInvalidArgument, "{}: no server after nats://", url);
  if (slash != std::string::npos) {
    const std::string rest = url.substr(slash + 1);
    const size_t next = rest.find('/');
    if (!rest.substr(0, next).empty()) a.stream = rest.substr(0, next);
    if (next != std::string::npos && next + 1 < rest.size()) a.subject = rest.substr(next + 1);
  }
  return a;
}

StatusOr<uint64_t> ReadRecordStream(const StreamAddress& address, std::chrono::milliseconds idle,
                                    FlowSink* sink, PointTable* points, Stats* stats) {
  auto js = JetStream::Connect(address.server, std::chrono::seconds(5));
  if (!js) return std::unexpected(js.error());
  const std::string name = fmt::format("llmprism-read-{}-{}", getpid(),
                                       std::chrono::steady_clock::now().time_since_epoch().count());
  auto consumer = (*js)->Consume(address.stream, address.subject, name, std::chrono::seconds(30));
  if (!consumer) return std::unexpected(consumer.error());
  uint64_t records = 0;
  Status status;
  while (status) {
    auto messages = (*consumer)->Fetch(64, idle);
    if (!messages) {
      status = std::unexpected(messages.error());
      break;
    }
    if (messages->empty()) break;
    for (DeliveredMessage& m : *messages) {
      auto batch = DecodeRecordBatchInto(m.data(), points);
      if (!batch) {
        stats->Add(Stat::record_batches_bad);
        fmt::print(stderr, "warning: {} stream {} message {} skipped: {}\n", address.server,
                   address.stream, m.stream_sequence(), batch.error().message);
        if (auto st = m.Ack(); !st) {
          status = st;
          break;
        }
        continue;
      }
      for (const FlowRecord& r : batch->records) sink->OnRecord(r);
      records += batch->records.size();
      stats->Add(Stat::records_read, batch->records.size());
      stats->Add(Stat::record_batches);
      if (auto st = m.Ack(); !st) {
        status = st;
        break;
      }
    }
  }
  consumer->reset();
  // A consumer left behind keeps only its name and position, no records: say so, carry on.
  if (auto st = (*js)->DeleteConsumer(address.stream, name); !st)
    fmt::print(stderr, "warning: {}\n", st.error().message);
  if (!status) return std::unexpected(status.error());
  return records;
}

}  // namespace prism::scaleout
