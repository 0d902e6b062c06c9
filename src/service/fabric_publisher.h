// File: service/fabric_publisher.h
// A shard analyser's side of the fabric stage (serve --fabric-stage, docs/scale-out.md): each
// window's fabric contribution, encoded (diagnosis/rules/fabric_contribution_codec.h), published
// in pieces no larger than the server takes on fabric.<window end>.<shard>.<k>.<n> of
// LLMPRISM_FABRIC (scaleout/fabric_stream.h) before the window is committed, so a committed
// window always has its contribution in the stream, and so do the windows before it that held
// no record of the shard (an empty contribution each). The message ids let the stream drop a
// second copy (the window analysed again after a restart or a takeover).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/status.h"
#include "diagnosis/rules/fabric_contribution.h"
#include "scaleout/jetstream.h"

namespace prism::service {

struct FabricPublisherOptions {
  std::string url;  // --nats
  int replicas = 1;  // of the stream, when this analyser creates it
  int shard = 0;
  // The largest piece, bytes; 0: the server's max_payload less 4 KiB (room for the headers).
  int64_t piece_bytes = 0;
  // Attempts are repeated every 250 ms for this long before the contribution is given up
  // (counted, logged: the fabric stage then judges the window without this shard).
  std::chrono::milliseconds patience{30'000};
};

class FabricPublisher {
 public:
  static StatusOr<std::unique_ptr<FabricPublisher>> Open(const FabricPublisherOptions& options);

  // Publishes the contribution of the window ending at `window_end_ns`, retrying; the error of
  // the last attempt when it could not.
  // `shard`: the shard it answers for (an analyser holding several by lease publishes a part
  // for each, diagnosis/rules/fabric_contribution_split.h); by default options.shard.
  Status Publish(int64_t window_end_ns, const diagnosis::FabricContribution& contribution,
                 int shard);
  Status Publish(int64_t window_end_ns, const diagnosis::FabricContribution& contribution) {
    return Publish(window_end_ns, contribution, options_.shard);
  }
  // The empty contribution of a window with no record of this shard (its jobs paused): the
  // fabric stage then knows the window whole without waiting for this shard. The same subject
  // and message id as any contribution of the window (one piece), so a second copy is dropped.
  Status PublishEmpty(int64_t window_end_ns, int shard);
  Status PublishEmpty(int64_t window_end_ns) { return PublishEmpty(window_end_ns, options_.shard); }
  // The end of the window of the newest message another shard put in the stream (read back from
  // the stream's last message, at most 256 messages); nullopt when there is none. An idle
  // shard's clock (WindowBuffer::MoveClockTo): that shard's records have reached that window
  // end.
  // `own_shards`: the shards this analyser publishes for (their messages are passed over).
  StatusOr<std::optional<int64_t>> NewestWindowEnd(std::span<const int> own_shards);
  StatusOr<std::optional<int64_t>> NewestWindowEnd() {
    const int own = options_.shard;
    return NewestWindowEnd(std::span<const int>(&own, 1));
  }
  // Contributions not even tried (counted as given up): the ones after one the stream did not
  // take in the same run of empty windows, which would each wait the whole patience again.
  void CountGivenUp(uint64_t n) { given_up_ += n; }

  int shard() const { return options_.shard; }
  uint64_t published() const { return published_; }
  uint64_t published_empty() const { return published_empty_; }  // of published()
  uint64_t pieces() const { return pieces_; }  // messages: a contribution is one or more
  uint64_t duplicates() const { return duplicates_; }  // the stream had it already
  uint64_t bytes() const { return bytes_; }
  uint64_t errors() const { return errors_; }  // failed attempts, retried
  uint64_t given_up() const { return given_up_; }

 private:
  explicit FabricPublisher(const FabricPublisherOptions& options) : options_(options) {}
  FabricPublisherOptions options_;
  std::unique_ptr<scaleout::JetStream> js_;
  int64_t piece_bytes_ = 0;
  std::atomic<uint64_t> published_{0}, published_empty_{0}, pieces_{0}, duplicates_{0}, bytes_{0},
      errors_{0}, given_up_{0};
};

}  // namespace prism::service
