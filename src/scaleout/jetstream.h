// File: scaleout/jetstream.h
// A durable, replicated buffer between collectors and analysers (docs/scale-out.md): NATS
// JetStream through the NATS C client (Debian's libnats). Only what the roles need: a stream of
// record batches (file storage, R copies, deduplicated by message id), publish with the stream's
// acknowledgement, and a durable pull consumer whose messages are acknowledged one by one once
// their records are committed; a message not acknowledged within the ack wait is delivered again
// (to this consumer or, after a restart, to the next process that binds it).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

struct __natsConnection;
struct __jsCtx;
struct __natsSubscription;
struct __natsMsg;

namespace prism::scaleout {

struct StreamSpec {
  std::string name;                   // e.g. LLMPRISM_RECORDS
  std::vector<std::string> subjects;  // e.g. records.>
  int replicas = 1;                   // 3 on a 3-node cluster: survives the loss of one node
  std::chrono::seconds dedup_window{120};
};

struct PublishAck {
  uint64_t sequence = 0;   // in the stream
  bool duplicate = false;  // the stream had this message id already: stored once
};

// One delivered message; Ack() it once what it carries is committed.
class DeliveredMessage {
 public:
  explicit DeliveredMessage(__natsMsg* msg);
  DeliveredMessage(DeliveredMessage&& other) noexcept;
  DeliveredMessage& operator=(DeliveredMessage&&) = delete;
  ~DeliveredMessage();
  std::span<const uint8_t> data() const;
  std::string subject() const;
  uint64_t stream_sequence() const { return stream_sequence_; }
  uint64_t deliveries() const { return deliveries_; }  // 1 on first delivery
  Status Ack();  // waits for the server's confirmation

 private:
  __natsMsg* msg_ = nullptr;
  uint64_t stream_sequence_ = 0, deliveries_ = 0;
};

// The batch fetch of libnats before 3.9.0 (Debian's is 3.4) writes past its array of n message
// pointers when it finds c messages already waiting in the subscription, n/2 <= c < n, and more
// than n - c arrive before its timeout: it asks the server for n - c, lowering the batch it
// compares its count with to n - c, which its count already exceeds, so it takes every message
// that comes until the timeout (nats.c src/js.c `_fetch`; fixed upstream in 3.9.0 by commit
// 8099b5c, "Fix heap buffer overflow in _fetch", #749). Messages arrive unasked-for routinely:
// those of a fetch that timed out before they came, of a fetch that stopped early the same way
// (c < n/2: it returns at n - c, c of its messages still coming), and, after a server restart,
// of every fetch made while it was down, whose requests the client buffered and sends together
// on reconnecting. At 64 a fetch that corrupted the heap of analysers whose server was killed
// (docs/scale-out.md, A node restart). Older libraries are asked for one message a library fetch
// (with n = 1, c is 0 or 1 and the count stops at 1: tests/scaleout/fetch_strays.sh), the
// messages asked of the server in one pull request of our own (PullConsumer::Fetch).
inline constexpr int kFirstSafeBatchFetchVersion = 0x030900;  // nats_GetVersionNumber()'s form
bool LibraryBatchFetchIsSafe();  // of the libnats loaded at run time

class PullConsumer {
 public:
  // `nc`: the connection `sub` is on (pull requests of our own are published on it); `stream`
  // and `consumer`: the consumer's names when known (a durable's), else asked of the server.
  // `pipelined` (with a libnats whose batch fetch can overflow): a batch asked of the server in
  // one request of ours; else one request per message. Durable consumers (shards read by lease)
  // are not pipelined: with it, e2e_serve_shard_leases lost records (the cause is not found), and
  // one request per message passed it.
  PullConsumer(__natsConnection* nc, __natsSubscription* sub, const std::string& stream = {},
               const std::string& consumer = {}, bool pipelined = true);
  ~PullConsumer();
  PullConsumer(const PullConsumer&) = delete;
  PullConsumer& operator=(const PullConsumer&) = delete;
  // Up to `n` messages, waiting at most `timeout` for the first; none is no error. With a libnats
  // whose batch fetch can overflow (above): the messages already in the subscription first, then
  // (pipelined) one pull request for the rest, its messages taken by library fetches of one, or
  // one request per message.
  StatusOr<std::vector<DeliveredMessage>> Fetch(int n, std::chrono::milliseconds timeout);
  // Messages of the consumer's subjects not yet delivered to it (the server's count): how far a
  // reader of some subjects only is behind; the stream's last sequence counts every subject.
  StatusOr<uint64_t> Pending();

 private:
  StatusOr<std::vector<DeliveredMessage>> FetchOneByOne(int n, std::chrono::milliseconds timeout);
  __natsConnection* nc_;
  __natsSubscription* sub_;
  std::string next_subject_;  // the consumer's $JS.API.CONSUMER.MSG.NEXT.<stream>.<name>
  bool pipelined_ = true;
};

class JetStream {
 public:
  // `url`: one server or several, comma-separated (a cluster's). The connection fails over to
  // another server and reconnects without end while the process runs; calls made meanwhile fail
  // (and the caller retries).
  static StatusOr<std::unique_ptr<JetStream>> Connect(const std::string& url,
                                                       std::chrono::milliseconds timeout);
  ~JetStream();
  JetStream(const JetStream&) = delete;
  JetStream& operator=(const JetStream&) = delete;

  // Creates the stream unless it exists (an existing one is used as it is). A JetStream that does
  // not answer yet (a cluster just started still electing its leader: the request times out or
  // finds no responder) is asked again, once a second, for up to `patience`; other errors return
  // at once.
  Status EnsureStream(const StreamSpec& spec,
                      std::chrono::seconds patience = std::chrono::seconds(0));
  StatusOr<PublishAck> Publish(const std::string& subject, std::span<const uint8_t> data,
                               const std::string& message_id);
  // Binds (creating it if absent) the durable pull consumer `durable` of `stream` on `subject`.
  StatusOr<std::unique_ptr<PullConsumer>> Consume(const std::string& stream,
                                                  const std::string& subject,
                                                  const std::string& durable,
                                                  std::chrono::milliseconds ack_wait);
  Status DeleteConsumer(const std::string& stream, const std::string& durable);
  // The durable consumer `durable` of `stream` (created if absent, replaced if present) reading
  // `subject` from `start_sequence` on, its messages acknowledged explicitly (`ack_wait`), and a
  // pull subscription bound to it. A shard's consumer (scaleout/shard_leases.h): the shard's
  // acknowledged position outlives whoever reads it.
  StatusOr<std::unique_ptr<PullConsumer>> ConsumeFrom(const std::string& stream,
                                                      const std::string& subject,
                                                      const std::string& durable,
                                                      uint64_t start_sequence,
                                                      std::chrono::milliseconds ack_wait);
  // The stream sequence every message up to which `durable` has had acknowledged (its ack
  // floor); 0 when the consumer does not exist or has none acknowledged.
  StatusOr<uint64_t> AckFloor(const std::string& stream, const std::string& durable);
  // Reads `subject` of `stream` from `start_sequence` on, through an ephemeral consumer the
  // server removes once nobody fetches (the reader keeps its own position: scaleout/
  // stream_checkpoint.h). Messages need no acknowledgement.
  StatusOr<std::unique_ptr<PullConsumer>> ReadFrom(const std::string& stream,
                                                   const std::string& subject,
                                                   uint64_t start_sequence);
  // The largest message the server takes (its max_payload), bytes.
  int64_t MaxPayload() const;
  // The stream's last sequence (0 when empty): how far a reader is behind.
  StatusOr<uint64_t> LastSequence(const std::string& stream);
  // The subject of the message at `sequence` of `stream`; empty when there is none (never
  // stored, or removed).
  StatusOr<std::string> SubjectAt(const std::string& stream, uint64_t sequence);
  // For the key-value buckets on the same connection (scaleout/key_value.h).
  __jsCtx* context() const { return js_; }

 private:
  JetStream(__natsConnection* nc, __jsCtx* js) : nc_(nc), js_(js) {}
  __natsConnection* nc_;
  __jsCtx* js_;
};

}  // namespace prism::scaleout
