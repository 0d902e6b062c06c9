#include "scaleout/jetstream.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <string>
#include <vector>

namespace prism::scaleout {

namespace {

std::unexpected<Error> NatsError(const char* what, natsStatus s, jsErrCode js = jsErrCode(0)) {
  return MakeError(ErrorCode::kInternal, "NATS: {}: {}{}", what, natsStatus_GetText(s),
                   js != 0 ? fmt::format(" (JetStream error {})", int(js)) : std::string());
}

}  // namespace

DeliveredMessage::DeliveredMessage(natsMsg* msg) : msg_(msg) {
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, msg_) == NATS_OK) {
    stream_sequence_ = meta->Sequence.Stream;
    deliveries_ = meta->NumDelivered;
    jsMsgMetaData_Destroy(meta);
  }
}

DeliveredMessage::DeliveredMessage(DeliveredMessage&& other) noexcept
    : msg_(other.msg_), stream_sequence_(other.stream_sequence_), deliveries_(other.deliveries_) {
  other.msg_ = nullptr;
}

DeliveredMessage::~DeliveredMessage() {
  if (msg_ != nullptr) natsMsg_Destroy(msg_);
}

std::span<const uint8_t> DeliveredMessage::data() const {
  return {reinterpret_cast<const uint8_t*>(natsMsg_GetData(msg_)),
          static_cast<size_t>(natsMsg_GetDataLength(msg_))};
}

int64_t JetStream::MaxPayload() const { return natsConnection_GetMaxPayload(nc_); }

std::string DeliveredMessage::subject() const {
  const char* s = natsMsg_GetSubject(msg_);
  return s == nullptr ? std::string() : std::string(s);
}

Status DeliveredMessage::Ack() {
  jsErrCode jerr = jsErrCode(0);
  const natsStatus s = natsMsg_AckSync(msg_, nullptr, &jerr);
  if (s != NATS_OK) return NatsError("acknowledging a message", s, jerr);
  return OkStatus();
}

namespace {

// Where a pull request for a consumer's next messages goes (the JetStream API's default prefix).
std::string NextMessageSubject(const std::string& stream, const std::string& consumer) {
  return fmt::format("$JS.API.CONSUMER.MSG.NEXT.{}.{}", stream, consumer);
}

}  // namespace

PullConsumer::PullConsumer(natsConnection* nc, natsSubscription* sub, const std::string& stream,
                           const std::string& consumer, bool pipelined)
    : nc_(nc), sub_(sub), pipelined_(pipelined) {
  if (!consumer.empty()) next_subject_ = NextMessageSubject(stream, consumer);
}

PullConsumer::~PullConsumer() { natsSubscription_Destroy(sub_); }

namespace {

// Every message of a fetch's list into `out`, the list freed.
void TakeMessages(natsMsgList* list, std::vector<DeliveredMessage>* out) {
  for (int i = 0; i < list->Count; ++i) {
    out->emplace_back(list->Msgs[i]);
    list->Msgs[i] = nullptr;  // owned by `out` now: natsMsgList_Destroy skips it
  }
  natsMsgList_Destroy(list);
}

}  // namespace

bool LibraryBatchFetchIsSafe() {
  static const bool safe = nats_GetVersionNumber() >= kFirstSafeBatchFetchVersion;
  return safe;
}

StatusOr<std::vector<DeliveredMessage>> PullConsumer::Fetch(int n,
                                                            std::chrono::milliseconds timeout) {
  std::vector<DeliveredMessage> out;
  natsMsgList list{};
  jsErrCode jerr = jsErrCode(0);
  // A fetch that collected messages before its timeout or error returns NATS_OK with them (libnats
  // 3.4, natsSubscription_Fetch); otherwise it has freed its array and `list` is empty.
  if (LibraryBatchFetchIsSafe()) {
    const natsStatus s = natsSubscription_Fetch(&list, sub_, n, timeout.count(), &jerr);
    if (s == NATS_TIMEOUT) return out;
    if (s != NATS_OK) return NatsError("fetching messages", s, jerr);
    TakeMessages(&list, &out);
    return out;
  }
  return FetchOneByOne(n, timeout);
}

// Older libnats (see jetstream.h). A library fetch of one takes a message waiting in the
// subscription without asking the server; finding none, it asks for one and waits. So: what
// waits first. Then, not pipelined (durable consumers, or a fetch under 20 ms), one request per
// message: the first waits up to `timeout`, the others (no_wait) expire within 50 ms. Pipelined,
// one pull request of our own for the rest, sent as the library's batch fetch
// sends it (no_wait with an expiry: the server delivers what it has, or the first message to
// come within the expiry), its messages taken one by one. A library fetch that found nothing
// waiting left its own request for one behind: that message comes later and waits, in stream
// order, for the next Fetch, as do any beyond `n`.
//
// A library fetch of one asks (when it asks) without no_wait: the server holds the request until
// a message comes or it expires, and refuses a no_wait request at once ("408 Requests Pending")
// while earlier requests wait for more than it has, which would end the batch before our own
// request's messages came. Only the first message is waited for up to `timeout`; after one, a
// fetch expiring within 50 ms ends the batch once nothing more comes (a longer one would, for a
// durable consumer, wait until this very fetch's unacknowledged messages are delivered again).
StatusOr<std::vector<DeliveredMessage>> PullConsumer::FetchOneByOne(
    int n, std::chrono::milliseconds timeout) {
  std::vector<DeliveredMessage> out;
  if (next_subject_.empty()) {
    // An ephemeral consumer's name, which only the server knows.
    jsConsumerInfo* ci = nullptr;
    jsErrCode jerr = jsErrCode(0);
    const natsStatus s = natsSubscription_GetConsumerInfo(&ci, sub_, nullptr, &jerr);
    if (s != NATS_OK) return NatsError("consumer info", s, jerr);
    next_subject_ = NextMessageSubject(ci->Stream, ci->Name);
    jsConsumerInfo_Destroy(ci);
  }
  constexpr std::chrono::milliseconds kFollowUpWait{50};
  constexpr std::chrono::milliseconds kShortestBatchWait{20};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remaining = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  // One library fetch of one message: false when none came (its expiry, or the server's status
  // for no messages), or on an error, kept only when nothing was taken before it (the next Fetch
  // meets it again if it lasts).
  Status error = OkStatus();
  auto take_one = [&](std::chrono::milliseconds wait, bool no_wait) {
    natsMsgList list{};
    jsFetchRequest req;
    jsFetchRequest_Init(&req);
    req.Batch = 1;
    req.NoWait = no_wait;
    req.Expires = std::chrono::nanoseconds(wait).count();
    const natsStatus s = natsSubscription_FetchRequest(&list, sub_, &req);
    if (s == NATS_OK) {
      TakeMessages(&list, &out);
      return true;
    }
    if (s != NATS_TIMEOUT && s != NATS_NOT_FOUND && out.empty()) {
      error = NatsError("fetching messages", s);
    }
    return false;
  };
  auto next_wait = [&] { return out.empty() ? remaining() : std::min(kFollowUpWait, remaining()); };
  auto waiting = [&] {
    int msgs = 0;
    return natsSubscription_GetPending(sub_, &msgs, nullptr) == NATS_OK && msgs > 0;
  };
  while (static_cast<int>(out.size()) < n && waiting()) {
    if (!take_one(next_wait(), false)) break;
  }
  if (!error) return std::unexpected(error.error());
  if (static_cast<int>(out.size()) >= n) return out;
  if (!pipelined_ || timeout < kShortestBatchWait) {
    // One request per message (see jetstream.h): the first waits, the others ask for what the
    // server has now.
    if (out.empty() && !take_one(remaining(), false)) {
      if (!error) return std::unexpected(error.error());
      return out;
    }
    while (static_cast<int>(out.size()) < n && take_one(kFollowUpWait, true)) {
    }
    return out;
  }
  // The server's expiry a little before ours, as the library sets it.
  const auto wait = remaining();
  const auto expires = wait >= std::chrono::milliseconds(20) ? wait - std::chrono::milliseconds(10)
                                                             : wait;
  const std::string request =
      fmt::format(R"({{"batch":{},"expires":{},"no_wait":true}})",
                  n - static_cast<int>(out.size()), std::chrono::nanoseconds(expires).count());
  const natsStatus s = natsConnection_PublishRequestString(nc_, next_subject_.c_str(),
                                                           natsSubscription_GetSubject(sub_),
                                                           request.c_str());
  if (s != NATS_OK) {
    if (out.empty()) return NatsError("asking for messages", s);
    return out;
  }
  while (static_cast<int>(out.size()) < n && std::chrono::steady_clock::now() < deadline) {
    if (!take_one(next_wait(), false)) break;
  }
  if (!error) return std::unexpected(error.error());
  return out;
}

StatusOr<uint64_t> PullConsumer::Pending() {
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = jsErrCode(0);
  const natsStatus s = natsSubscription_GetConsumerInfo(&ci, sub_, nullptr, &jerr);
  if (s != NATS_OK) return NatsError("consumer info", s, jerr);
  const uint64_t pending = ci->NumPending;
  jsConsumerInfo_Destroy(ci);
  return pending;
}

StatusOr<std::unique_ptr<JetStream>> JetStream::Connect(const std::string& url,
                                                        std::chrono::milliseconds timeout) {
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  // A cluster's servers: every one is tried, and reconnected to when another fails.
  std::vector<std::string> servers;
  for (size_t from = 0; from <= url.size();) {
    const size_t comma = std::min(url.find(',', from), url.size());
    if (comma > from) servers.push_back(url.substr(from, comma - from));
    from = comma + 1;
  }
  std::vector<const char*> server_ptrs;
  for (const std::string& server : servers) server_ptrs.push_back(server.c_str());
  if (s == NATS_OK) {
    s = natsOptions_SetServers(opts, server_ptrs.data(), static_cast<int>(server_ptrs.size()));
  }
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, timeout.count());
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 250);
  // A server that stops answering (a partition, SIGSTOP) is left after ~3 s, not the default 4
  // minutes: pings every second, at most 3 unanswered.
  if (s == NATS_OK) s = natsOptions_SetPingInterval(opts, 1000);
  if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(opts, 3);
  natsConnection* nc = nullptr;
  if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
  natsOptions_Destroy(opts);
  if (s != NATS_OK) return NatsError(fmt::format("connecting to {}", url).c_str(), s);
  jsCtx* js = nullptr;
  s = natsConnection_JetStream(&js, nc, nullptr);
  if (s != NATS_OK) {
    natsConnection_Destroy(nc);
    return NatsError("opening JetStream", s);
  }
  return std::unique_ptr<JetStream>(new JetStream(nc, js));
}

JetStream::~JetStream() {
  jsCtx_Destroy(js_);
  natsConnection_Destroy(nc_);
}

Status JetStream::EnsureStream(const StreamSpec& spec, std::chrono::seconds patience) {
  std::vector<const char*> subjects;
  for (const std::string& s : spec.subjects) subjects.push_back(s.c_str());
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = spec.name.c_str();
  cfg.Subjects = subjects.data();
  cfg.SubjectsLen = static_cast<int>(subjects.size());
  cfg.Storage = js_FileStorage;
  cfg.Replicas = spec.replicas;
  cfg.Duplicates = std::chrono::nanoseconds(spec.dedup_window).count();
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (int attempt = 1;; ++attempt) {
    jsStreamInfo* info = nullptr;
    jsErrCode jerr = jsErrCode(0);
    const natsStatus s = js_AddStream(&info, js_, &cfg, nullptr, &jerr);
    jsStreamInfo_Destroy(info);
    if (s == NATS_OK || jerr == JSStreamNameExistErr) return OkStatus();
    const bool not_ready = s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS;
    if (!not_ready || std::chrono::steady_clock::now() >= deadline) {
      return NatsError(fmt::format("creating stream {} ({} attempts)", spec.name, attempt).c_str(),
                       s, jerr);
    }
    if (attempt == 1) {
      fmt::print(stderr, "llmprism: JetStream not ready to create stream {} ({}): asking again "
                 "for up to {} s\n", spec.name, natsStatus_GetText(s), patience.count());
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

StatusOr<PublishAck> JetStream::Publish(const std::string& subject, std::span<const uint8_t> data,
                                        const std::string& message_id) {
  jsPubOptions opts;
  jsPubOptions_Init(&opts);
  opts.MsgId = message_id.c_str();
  jsPubAck* ack = nullptr;
  jsErrCode jerr = jsErrCode(0);
  const natsStatus s = js_Publish(&ack, js_, subject.c_str(), data.data(),
                                  static_cast<int>(data.size()), &opts, &jerr);
  if (s != NATS_OK) return NatsError(fmt::format("publishing to {}", subject).c_str(), s, jerr);
  PublishAck out{ack->Sequence, ack->Duplicate};
  jsPubAck_Destroy(ack);
  return out;
}

StatusOr<std::unique_ptr<PullConsumer>> JetStream::Consume(const std::string& stream,
                                                           const std::string& subject,
                                                           const std::string& durable,
                                                           std::chrono::milliseconds ack_wait) {
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Config.AckWait = std::chrono::nanoseconds(ack_wait).count();
  natsSubscription* sub = nullptr;
  jsErrCode jerr = jsErrCode(0);
  const natsStatus s =
      js_PullSubscribe(&sub, js_, subject.c_str(), durable.c_str(), nullptr, &so, &jerr);
  if (s != NATS_OK)
    return NatsError(fmt::format("binding consumer {} of {}", durable, stream).c_str(), s, jerr);
  return std::make_unique<PullConsumer>(nc_, sub, stream, durable, false);
}

Status JetStream::DeleteConsumer(const std::string& stream, const std::string& durable) {
  jsErrCode jerr = jsErrCode(0);
  const natsStatus s = js_DeleteConsumer(js_, stream.c_str(), durable.c_str(), nullptr, &jerr);
  if (s != NATS_OK)
    return NatsError(fmt::format("deleting consumer {} of {}", durable, stream).c_str(), s, jerr);
  return OkStatus();
}

StatusOr<std::unique_ptr<PullConsumer>> JetStream::ConsumeFrom(
    const std::string& stream, const std::string& subject, const std::string& durable,
    uint64_t start_sequence, std::chrono::milliseconds ack_wait) {
  // A consumer's start cannot be changed in place: the old one (with its unacknowledged
  // messages, which the new one reads again from `start_sequence`) goes first.
  jsErrCode jerr = jsErrCode(0);
  const natsStatus del = js_DeleteConsumer(js_, stream.c_str(), durable.c_str(), nullptr, &jerr);
  if (del != NATS_OK && jerr != JSConsumerNotFoundErr) {
    return NatsError(fmt::format("replacing consumer {} of {}", durable, stream).c_str(), del,
                     jerr);
  }
  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = durable.c_str();
  cc.FilterSubject = subject.c_str();
  cc.DeliverPolicy = js_DeliverByStartSequence;
  cc.OptStartSeq = std::max<uint64_t>(1, start_sequence);
  cc.AckPolicy = js_AckExplicit;
  cc.AckWait = std::chrono::nanoseconds(ack_wait).count();
  // Messages stay unacknowledged until the last window holding their records is committed: a
  // minute of records at 1 M records/s is ~15,000 batches.
  cc.MaxAckPending = 1'000'000;
  jsConsumerInfo* ci = nullptr;
  jerr = jsErrCode(0);
  natsStatus s = js_AddConsumer(&ci, js_, stream.c_str(), &cc, nullptr, &jerr);
  jsConsumerInfo_Destroy(ci);
  if (s != NATS_OK) {
    return NatsError(fmt::format("creating consumer {} of {} from sequence {}", durable, stream,
                                 start_sequence).c_str(),
                     s, jerr);
  }
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Consumer = durable.c_str();
  natsSubscription* sub = nullptr;
  jerr = jsErrCode(0);
  s = js_PullSubscribe(&sub, js_, subject.c_str(), durable.c_str(), nullptr, &so, &jerr);
  if (s != NATS_OK)
    return NatsError(fmt::format("binding consumer {} of {}", durable, stream).c_str(), s, jerr);
  return std::make_unique<PullConsumer>(nc_, sub, stream, durable, false);
}

StatusOr<uint64_t> JetStream::AckFloor(const std::string& stream, const std::string& durable) {
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = jsErrCode(0);
  const natsStatus s =
      js_GetConsumerInfo(&ci, js_, stream.c_str(), durable.c_str(), nullptr, &jerr);
  if (s != NATS_OK) {
    if (jerr == JSConsumerNotFoundErr) return uint64_t{0};
    return NatsError(fmt::format("consumer {} of {}", durable, stream).c_str(), s, jerr);
  }
  const uint64_t floor = ci->AckFloor.Stream;
  jsConsumerInfo_Destroy(ci);
  return floor;
}

StatusOr<std::unique_ptr<PullConsumer>> JetStream::ReadFrom(const std::string& stream,
                                                            const std::string& subject,
                                                            uint64_t start_sequence) {
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Config.DeliverPolicy = js_DeliverByStartSequence;
  so.Config.OptStartSeq = std::max<uint64_t>(1, start_sequence);
  so.Config.AckPolicy = js_AckNone;
  so.Config.InactiveThreshold = std::chrono::nanoseconds(std::chrono::seconds(30)).count();
  natsSubscription* sub = nullptr;
  jsErrCode jerr = jsErrCode(0);
  const natsStatus s = js_PullSubscribe(&sub, js_, subject.c_str(), nullptr, nullptr, &so, &jerr);
  if (s != NATS_OK) {
    return NatsError(fmt::format("reading {} of {} from sequence {}", subject, stream,
                                 start_sequence).c_str(),
                     s, jerr);
  }
  return std::make_unique<PullConsumer>(nc_, sub, std::string(), std::string(), true);
}

StatusOr<uint64_t> JetStream::LastSequence(const std::string& stream) {
  jsStreamInfo* info = nullptr;
  jsErrCode jerr = jsErrCode(0);
  const natsStatus s = js_GetStreamInfo(&info, js_, stream.c_str(), nullptr, &jerr);
  if (s != NATS_OK) return NatsError(fmt::format("stream {}", stream).c_str(), s, jerr);
  const uint64_t last = info->State.LastSeq;
  jsStreamInfo_Destroy(info);
  return last;
}

StatusOr<std::string> JetStream::SubjectAt(const std::string& stream, uint64_t sequence) {
  natsMsg* msg = nullptr;
  jsErrCode jerr = jsErrCode(0);
  const natsStatus s = js_GetMsg(&msg, js_, stream.c_str(), sequence, nullptr, &jerr);
  if (s == NATS_NOT_FOUND) return std::string();
  if (s != NATS_OK) {
    return NatsError(fmt::format("message {} of stream {}", sequence, stream).c_str(), s, jerr);
  }
  std::string subject = natsMsg_GetSubject(msg);
  natsMsg_Destroy(msg);
  return subject;
}

}  // namespace prism::scaleout
