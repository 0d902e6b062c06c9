#include "service/fabric_publisher.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "diagnosis/rules/fabric_contribution_codec.h"
#include "scaleout/fabric_stream.h"

namespace prism::service {

StatusOr<std::unique_ptr<FabricPublisher>> FabricPublisher::Open(
    const FabricPublisherOptions& options) {
  auto p = std::unique_ptr<FabricPublisher>(new FabricPublisher(options));
  PRISM_ASSIGN_OR_RETURN(p->js_, scaleout::JetStream::Connect(options.url, std::chrono::seconds(5)));
  PRISM_RETURN_IF_ERROR(
      p->js_->EnsureStream(scaleout::FabricStreamSpec(options.replicas), std::chrono::seconds(30)));
  p->piece_bytes_ = options.piece_bytes > 0 ? options.piece_bytes
                                            : std::max<int64_t>(p->js_->MaxPayload() - 4096, 1024);
  return p;
}

Status FabricPublisher::Publish(int64_t window_end_ns,
                                const diagnosis::FabricContribution& contribution, int shard) {
  const std::string bytes = diagnosis::EncodeFabricContribution(contribution);
  const size_t piece = static_cast<size_t>(piece_bytes_);
  const int parts = static_cast<int>(std::max<size_t>(1, (bytes.size() + piece - 1) / piece));
  const auto give_up = std::chrono::steady_clock::now() + options_.patience;
  for (int part = 0; part < parts; ++part) {
    const scaleout::FabricKey key{window_end_ns, shard, part, parts};
    const size_t from = static_cast<size_t>(part) * piece;
    const std::span<const uint8_t> data(reinterpret_cast<const uint8_t*>(bytes.data()) + from,
                                        std::min(piece, bytes.size() - from));
    while (true) {
      auto ack = js_->Publish(scaleout::FabricSubject(key), data, scaleout::FabricMessageId(key));
      if (ack) {
        ++pieces_;
        if (ack->duplicate) ++duplicates_;
        break;
      }
      ++errors_;
      if (std::chrono::steady_clock::now() >= give_up) {
        ++given_up_;
        return MakeError(ErrorCode::kInternal, "fabric contribution of shard {} for the window "
                         "ending {} ({} bytes) not published (piece {} of {}): {}", shard,
                         window_end_ns,
                         bytes.size(), part + 1, parts, ack.error().message);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  ++published_;
  bytes_ += bytes.size();
  return OkStatus();
}

Status FabricPublisher::PublishEmpty(int64_t window_end_ns, int shard) {
  PRISM_RETURN_IF_ERROR(Publish(window_end_ns, diagnosis::FabricContribution(), shard));
  ++published_empty_;
  return OkStatus();
}

StatusOr<std::optional<int64_t>> FabricPublisher::NewestWindowEnd(std::span<const int> own_shards) {
  // From the last message back to the newest of another shard: this shard's own (empties it
  // just published on an earlier clock) would hide a later window another shard published
  // before them. Bounded: a shard's last windows in many pieces may hide the others for a while.
  constexpr uint64_t kLookBack = 256;
  PRISM_ASSIGN_OR_RETURN(const uint64_t last, js_->LastSequence(scaleout::kFabricStream));
  for (uint64_t seq = last; seq > 0 && last - seq < kLookBack; --seq) {
    PRISM_ASSIGN_OR_RETURN(const std::string subject,
                           js_->SubjectAt(scaleout::kFabricStream, seq));
    const std::optional<scaleout::FabricKey> key = scaleout::ParseFabricSubject(subject);
    if (key && std::find(own_shards.begin(), own_shards.end(), key->shard) == own_shards.end())
      return std::optional<int64_t>(key->window_end_ns);
  }
  return std::optional<int64_t>();
}

}  // namespace prism::service
