// Test driver for tests/scaleout/fetch_strays.sh: PullConsumer::Fetch while messages of earlier
// pull requests are still arriving on the subscription ("strays"), as after a reconnect (the
// requests of the fetches made while the server was down are sent on together) or after a fetch
// that timed out before its messages came.
//
//   fetch_strays_driver URL
//
// A stream of 164 small messages and a pull subscription on it (an ephemeral consumer). A pull
// request for 40 messages is sent on the subscription's inbox and its 40 messages wait in the
// subscription; 300 ms into the first Fetch(64), a request for 100 more is sent the same way. The
// batch fetch of libnats before 3.9.0 takes the 40, asks the server for 24 more and then, never
// seeing its count equal the 24 it asked for, keeps every message arriving until its timeout:
// 164 pointers written into an array of 64 (heap corruption). Checked: no Fetch returns more than
// it asked for, and every message comes once, in stream order. One line of figures on stdout;
// exit 1 with the reason on stderr. Bounded: every wait is at most 10 s.
#include <nats/nats.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "scaleout/jetstream.h"

namespace {

namespace so = prism::scaleout;

constexpr char kStream[] = "FETCH_STRAYS";
constexpr char kSubject[] = "strays.messages";
constexpr int kWaiting = 40;   // delivered before the first Fetch
constexpr int kLate = 100;     // delivered while it runs
constexpr int kMessages = kWaiting + 24 + kLate;
constexpr int kFetch = 64;

int Fail(const std::string& what) {
  fmt::print(stderr, "fetch_strays_driver: {}\n", what);
  return 1;
}

int Fail(const char* what, natsStatus s) {
  return Fail(fmt::format("{}: {}", what, natsStatus_GetText(s)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return Fail("usage: fetch_strays_driver URL");
  natsConnection* nc = nullptr;
  natsStatus s = natsConnection_ConnectTo(&nc, argv[1]);
  if (s != NATS_OK) return Fail("connecting", s);
  jsCtx* js = nullptr;
  s = natsConnection_JetStream(&js, nc, nullptr);
  if (s != NATS_OK) return Fail("JetStream", s);

  const char* subjects[] = {kSubject};
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = kStream;
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_MemoryStorage;
  jsErrCode jerr = jsErrCode(0);
  s = js_AddStream(nullptr, js, &cfg, nullptr, &jerr);
  if (s != NATS_OK) return Fail("creating the stream", s);
  for (int i = 1; i <= kMessages; ++i) {
    const std::string body = fmt::format("message {}", i);
    s = js_Publish(nullptr, js, kSubject, body.data(), static_cast<int>(body.size()), nullptr,
                   &jerr);
    if (s != NATS_OK) return Fail("publishing", s);
  }

  jsSubOptions so_opts;
  jsSubOptions_Init(&so_opts);
  so_opts.Stream = kStream;
  so_opts.Config.AckPolicy = js_AckNone;
  so_opts.Config.DeliverPolicy = js_DeliverAll;
  natsSubscription* sub = nullptr;
  s = js_PullSubscribe(&sub, js, kSubject, nullptr, nullptr, &so_opts, &jerr);
  if (s != NATS_OK) return Fail("subscribing", s);
  jsConsumerInfo* ci = nullptr;
  s = natsSubscription_GetConsumerInfo(&ci, sub, nullptr, &jerr);
  if (s != NATS_OK) return Fail("consumer info", s);
  const std::string next = fmt::format("$JS.API.CONSUMER.MSG.NEXT.{}.{}", kStream, ci->Name);
  jsConsumerInfo_Destroy(ci);
  const std::string inbox = natsSubscription_GetSubject(sub);
  auto pull = [&](int batch) {
    const std::string request = fmt::format(R"({{"batch":{},"expires":5000000000}})", batch);
    natsStatus ps = natsConnection_PublishRequestString(nc, next.c_str(), inbox.c_str(),
                                                        request.c_str());
    if (ps == NATS_OK) ps = natsConnection_FlushTimeout(nc, 5000);
    return ps;
  };

  // An earlier request's messages, waiting in the subscription.
  s = pull(kWaiting);
  if (s != NATS_OK) return Fail("pull request", s);
  int pending = 0;
  for (int tries = 0; tries < 1000 && pending < kWaiting; ++tries) {
    natsSubscription_GetPending(sub, &pending, nullptr);
    if (pending < kWaiting) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (pending != kWaiting) return Fail(fmt::format("{} messages waiting, expected {}", pending,
                                                   kWaiting));
  // Another earlier request's, arriving while the first Fetch runs.
  natsStatus late_status = NATS_OK;
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    late_status = pull(kLate);
  });

  int largest = 0, fetches = 0;
  std::vector<uint64_t> sequences;
  std::string error;
  {
    so::PullConsumer consumer(nc, sub);  // destroys the subscription
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (static_cast<int>(sequences.size()) < kMessages &&
           std::chrono::steady_clock::now() < deadline) {
      auto messages = consumer.Fetch(kFetch, std::chrono::milliseconds(1000));
      if (!messages) {
        error = messages.error().message;
        break;
      }
      ++fetches;
      largest = std::max(largest, static_cast<int>(messages->size()));
      for (const so::DeliveredMessage& m : *messages) sequences.push_back(m.stream_sequence());
      // The first Fetch done before the late request's messages came: they wait for the next.
      if (fetches == 1) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  late.join();
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);

  if (!error.empty()) return Fail("fetching: " + error);
  if (late_status != NATS_OK) return Fail("late pull request", late_status);
  fmt::print("{} fetches of up to {}: {} messages, at most {} in one\n", fetches, kFetch,
             sequences.size(), largest);
  if (largest > kFetch) {
    return Fail(fmt::format("a Fetch of {} returned {} messages: the library wrote past its "
                            "array of {}", kFetch, largest, kFetch));
  }
  std::vector<uint64_t> expected;
  for (int i = 1; i <= kMessages; ++i) expected.push_back(static_cast<uint64_t>(i));
  if (sequences != expected) {
    return Fail(fmt::format("stream sequences {}, expected 1..{} once each in order",
                            fmt::join(sequences, ","), kMessages));
  }
  return 0;
}
