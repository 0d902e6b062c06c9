// File: service/http_server.h
// The HTTP server of `llmprism serve`: cpp-httplib's Server (routing, parsing, responses) with
// its own connection handling, because the library's holds a worker thread for as long as a
// client keeps a connection open: four idle keep-alive connections were enough to starve a
// four-thread pool, /api/v1/health included. Here:
//   - a pool of `threads` workers, each serving one connection at a time;
//   - at most `max_connections` connections served or waiting; beyond, a new connection is
//     answered 503 at once by the accepting thread and closed (counted);
//   - a connection idle before a request (none sent yet, or between keep-alive requests) gives
//     its worker up as soon as another connection waits, after a short grace, and is closed
//     after `idle_timeout_ms` in any case;
//   - a request must arrive whole within `request_timeout_ms` (a client trickling its headers
//     is cut off: counted), and each read or write waits at most `io_timeout_ms`.
// Sits between the listening socket and service/http_api.h (the routes).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <httplib.h>

namespace prism::service {

struct HttpLimits {
  int threads = 8;
  int max_connections = 64;
  int64_t idle_timeout_ms = 5'000;
  int64_t request_timeout_ms = 10'000;
  int64_t io_timeout_ms = 5'000;
  // An idle connection keeps its worker this long even when another connection waits (a client
  // that has just connected may be about to send).
  int64_t idle_grace_ms = 200;
};

// Live counts for /metrics and /api/v1/ingest.
struct HttpCounters {
  std::atomic<int64_t> open{0};  // connections served or waiting
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};      // over max_connections: 503
  std::atomic<uint64_t> idle_closed{0};  // idle past idle_timeout_ms, or yielded to others
  std::atomic<uint64_t> slow_closed{0};  // request not whole within request_timeout_ms
};

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(const HttpLimits& limits);
  ~HttpServer() override;

  const HttpCounters& counters() const { return counters_; }
  const HttpLimits& limits() const { return limits_; }

  class Pool;  // the bounded worker pool (http_server.cc)

 private:
  bool process_and_close_socket(socket_t sock) override;

  HttpLimits limits_;
  HttpCounters counters_;
  std::atomic<Pool*> pool_{nullptr};  // set while listening
};

}  // namespace prism::service
