#include "scaleout/shard_router.h"

#include <algorithm>
#include <span>

#include <fmt/format.h>

namespace prism::scaleout {

StatusOr<std::unique_ptr<ShardRouter>> ShardRouter::Open(JetStream* js,
                                                         const ShardRouterOptions& options,
                                                         const PointTable* points) {
  auto router = std::unique_ptr<ShardRouter>(new ShardRouter(js, options, points));
  PRISM_RETURN_IF_ERROR(
      js->EnsureStream({kPairStream, {kPairSubjects}, options.replicas}, std::chrono::seconds(30)));
  PRISM_ASSIGN_OR_RETURN(router->bucket_, KeyValueBucket::Open(js, kShardBucket, options.replicas));
  PRISM_ASSIGN_OR_RETURN(router->watcher_, router->bucket_->Watch());
  return router;
}

ShardRouter::ShardRouter(JetStream* js, const ShardRouterOptions& options, const PointTable* points)
    : js_(js),
      options_(options),
      points_(points),
      pairs_(options.step_ns, static_cast<int>(2 * options.window_ns / options.step_ns) + 1) {}

Status ShardRouter::FollowMap() {
  while (true) {
    PRISM_ASSIGN_OR_RETURN(std::optional<KeyValueUpdate> u,
                           watcher_->Next(std::chrono::milliseconds(1)));
    if (!u) return OkStatus();
    if (!table_.Apply(*u)) ++bad_map_entries_;
  }
}

BatchPublisher& ShardRouter::PublisherFor(const std::string& subject) {
  std::unique_ptr<BatchPublisher>& p = publishers_[subject];
  if (!p) {
    p = std::make_unique<BatchPublisher>(js_, subject,
                                         fmt::format("{}.{}", options_.id_prefix, subject), points_,
                                         options_.batch_records);
  }
  return *p;
}

void ShardRouter::OnRecord(const FlowRecord& record) {
  ++records_;
  pairs_.Add(record);
  static const std::string kUnrouted = kUnroutedSubject;
  const std::string subject = table_.SubjectOf(record, kUnrouted);
  if (subject == kUnrouted) ++unrouted_;
  PublisherFor(subject).OnRecord(record);
}

// Pairs per summary message: 40 bytes each, so a message stays well under NATS's default
// maximum payload (1 MB), which one flush of a large fabric's pairs exceeds (10,240 GPUs: 19,200
// pairs per step bucket); the server refuses a larger message outright.
constexpr size_t kPairsPerMessage = 16384;

Status ShardRouter::PublishPairs() {
  std::vector<PairSighting> fresh = pairs_.TakeNew();
  pairs_held_.insert(pairs_held_.end(), fresh.begin(), fresh.end());
  size_t published = 0;
  Status status = OkStatus();
  while (published < pairs_held_.size()) {
    const size_t n = std::min(kPairsPerMessage, pairs_held_.size() - published);
    const std::string bytes =
        EncodePairSummary(std::span<const PairSighting>(pairs_held_).subspan(published, n));
    auto ack = js_->Publish(options_.pair_subject,
                            {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                            fmt::format("{}.pairs-{}", options_.id_prefix, pair_messages_));
    if (!ack) {
      ++pair_errors_;
      status = std::unexpected(ack.error());
      break;
    }
    ++pair_messages_;
    published += n;
  }
  // What the stream took is done; the rest is held and published first next time.
  pairs_held_.erase(pairs_held_.begin(), pairs_held_.begin() + static_cast<ptrdiff_t>(published));
  return status;
}

Status ShardRouter::Flush() {
  // The recogniser should know a pair before it is asked to route records of it.
  PRISM_RETURN_IF_ERROR(PublishPairs());
  for (auto& [subject, p] : publishers_) PRISM_RETURN_IF_ERROR(p->Flush());
  return OkStatus();
}

void ShardRouter::set_points(const PointTable* points) {
  points_ = points;
  for (auto& [subject, p] : publishers_) p->set_points(points);
}

uint64_t ShardRouter::published_records() const {
  uint64_t n = 0;
  for (const auto& [subject, p] : publishers_) n += p->published_records();
  return n;
}

uint64_t ShardRouter::batches() const {
  uint64_t n = 0;
  for (const auto& [subject, p] : publishers_) n += p->batches();
  return n;
}

uint64_t ShardRouter::errors() const {
  uint64_t n = pair_errors_;
  for (const auto& [subject, p] : publishers_) n += p->errors();
  return n;
}

uint64_t ShardRouter::held_records() const {
  uint64_t n = 0;
  for (const auto& [subject, p] : publishers_) n += p->held_records();
  return n;
}

std::map<std::string, uint64_t> ShardRouter::routed() const {
  std::map<std::string, uint64_t> out;
  for (const auto& [subject, p] : publishers_) out[subject] = p->records();
  return out;
}

}  // namespace prism::scaleout
