#include "service/stream_source.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "scaleout/record_batch.h"
#include "scaleout/record_stream.h"
#include "scaleout/shard_map.h"

namespace prism::service {

StatusOr<std::unique_ptr<StreamSource>> StreamSource::Open(
    const StreamSourceOptions& options, const std::optional<StreamPosition>& resumed) {
  uint64_t first = 1;
  std::optional<int64_t> committed;
  if (resumed) {
    if (resumed->stream != options.stream || resumed->subject != options.subject) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "the database holds the position of stream {} subject {}, not of {} {}: "
                       "use another --db for another stream",
                       resumed->stream, resumed->subject, options.stream, options.subject);
    }
    first = resumed->resume_sequence;
    committed = resumed->committed_end_ns;
  }
  auto source = std::unique_ptr<StreamSource>(new StreamSource(options, first, committed));
  PRISM_RETURN_IF_ERROR(source->Connect());
  return source;
}

StreamSource::StreamSource(const StreamSourceOptions& options, uint64_t first_sequence,
                           std::optional<int64_t> committed_end_ns)
    : options_(options),
      checkpoint_(options.window_ns, options.step_ns, first_sequence),
      committed_end_ns_(committed_end_ns) {
  next_sequence_ = std::max<uint64_t>(1, first_sequence);
  if (committed_end_ns_) {
    first_needed_start_ns_ = scaleout::StreamCheckpoint::FirstUncommittedStart(
        *committed_end_ns_, options.window_ns, options.step_ns);
  }
}

std::string StreamSource::name() const {
  return fmt::format("stream:{}/{}", options_.stream, options_.subject);
}

Status StreamSource::Connect() {
  consumer_.reset();
  if (!js_) {
    auto js = scaleout::JetStream::Connect(options_.url, std::chrono::seconds(5));
    if (!js) return std::unexpected(js.error());
    js_ = std::move(*js);
  }
  auto consumer = js_->ReadFrom(options_.stream, options_.subject, next_sequence_.load());
  if (!consumer) return std::unexpected(consumer.error());
  consumer_ = std::move(*consumer);
  return OkStatus();
}

void StreamSource::LookUpLastSequence(uint64_t delivered_up_to) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_lookup_ < std::chrono::seconds(1)) return;
  last_lookup_ = now;
  if (options_.subject != scaleout::kRecordSubjects) {
    // A reader of some subjects (one shard's) would never reach the stream's last sequence: the
    // messages of its subjects not delivered yet, counted from where it is.
    auto pending = consumer_->Pending();
    reachable_ = pending.has_value();
    if (pending) {
      last_sequence_ = std::max(next_sequence_.load() - 1, delivered_up_to) + *pending;
    }
    return;
  }
  auto last = js_->LastSequence(options_.stream);
  // The stream not answering (its node gone, no leader yet) is an outage, not quiet data.
  reachable_ = last.has_value();
  if (last) last_sequence_ = *last;
}

std::optional<int64_t> ReadWindowOrigin(scaleout::JetStream* js,
                                        std::unique_ptr<scaleout::KeyValueBucket>* bucket) {
  if (!*bucket) {
    auto bound = scaleout::KeyValueBucket::Bind(js, scaleout::kShardBucket);
    if (!bound) return std::nullopt;  // no recogniser yet: asked again with the next records
    *bucket = std::move(*bound);
  }
  auto value = (*bucket)->Get(scaleout::kWindowOriginKey);
  if (!value || !*value) return std::nullopt;
  int64_t origin = 0;
  auto [end, ec] = std::from_chars((*value)->data(), (*value)->data() + (*value)->size(), origin);
  if (ec != std::errc() || end != (*value)->data() + (*value)->size()) {
    fmt::print(stderr, "llmprism serve: {}: {} is '{}', expected Unix ns; windows placed by this "
               "shard's records\n", scaleout::kShardBucket, scaleout::kWindowOriginKey, **value);
    origin = INT64_MAX - 1;  // asked once
  }
  return origin;
}

void StreamSource::LookUpOrigin() {
  if (options_.subject == scaleout::kRecordSubjects || origin_ns_.load() != INT64_MAX) return;
  if (auto origin = ReadWindowOrigin(js_.get(), &shard_bucket_)) origin_ns_ = *origin;
}

Status StreamSource::Poll(int max_messages, std::chrono::milliseconds wait, FlowSink* sink,
                          PointTable* points, Stats* stats) {
  if (!consumer_) {
    ++reconnects_;
    if (Status st = Connect(); !st) {
      reachable_ = false;
      return st;
    }
  }
  auto messages = consumer_->Fetch(max_messages, wait);
  if (!messages) {
    // The server went away or dropped the reader: read again from the first message not read.
    consumer_.reset();
    reachable_ = false;
    return std::unexpected(messages.error());
  }
  reachable_ = true;
  LookUpLastSequence(messages->empty() ? 0 : messages->back().stream_sequence());
  // A reader whose server went away with its consumer gets nothing, without an error, while the
  // stream holds messages it has not read: after 3 s of that, set the reading up again.
  const auto now = std::chrono::steady_clock::now();
  if (!messages->empty() || last_sequence_.load() < next_sequence_.load()) {
    stalled_since_ = now;
  } else if (now - stalled_since_ > std::chrono::seconds(3)) {
    fmt::print(stderr, "llmprism serve: {}: nothing delivered for 3 s with {} messages to read: "
               "reading set up again from sequence {}\n", name(),
               last_sequence_.load() + 1 - next_sequence_.load(), next_sequence_.load());
    consumer_.reset();
    stalled_since_ = now;
  }
  // Before the first records reach the window buffer: it places its first window by the origin.
  if (!messages->empty()) LookUpOrigin();
  for (scaleout::DeliveredMessage& m : *messages) {
    const uint64_t seq = m.stream_sequence();
    if (seq < next_sequence_.load() || m.deliveries() > 1) ++redelivered_;
    if (seq < next_sequence_.load()) continue;  // delivered again after a reconnect: read once
    next_sequence_ = seq + 1;
    auto batch = scaleout::DecodeRecordBatchInto(m.data(), points);
    if (!batch) {
      stats->Add(Stat::record_batches_bad);
      fmt::print(stderr, "llmprism serve: {} message {} skipped: {}\n", name(), seq,
                 batch.error().message);
      checkpoint_.Read(seq, false, 0);
      continue;
    }
    stats->Add(Stat::record_batches);
    int64_t latest_start = INT64_MIN;
    for (const FlowRecord& r : batch->records) latest_start = std::max(latest_start, r.start_ns);
    // Known before its records can reach a window: the message stays needed until the last
    // window holding them is committed.
    checkpoint_.Read(seq, !batch->records.empty(), latest_start);
    uint64_t skipped = 0;
    for (const FlowRecord& r : batch->records) {
      if (r.start_ns < first_needed_start_ns_) {
        ++skipped;
        continue;
      }
      sink->OnRecord(r);
    }
    stats->Add(Stat::records_read, batch->records.size() - skipped);
    already_analysed_ += skipped;
  }
  return OkStatus();
}

StreamPosition StreamSource::PositionAfter(int64_t end_ns) {
  StreamPosition p;
  p.stream = options_.stream;
  p.subject = options_.subject;
  p.resume_sequence = checkpoint_.ResumeSequence(end_ns);
  p.committed_end_ns = end_ns;
  return p;
}

}  // namespace prism::service
