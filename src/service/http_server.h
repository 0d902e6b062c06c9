// File: service/http_server.h
// The HTTP server of `llmprism serve`: cpp-httplib's Server (routing, parsing, responses) — or
// its SSLServer for HTTPS, which holds the TLS context made from --tls-cert / --tls-key — with
// its own connection handling, because the library's holds a worker thread for as long as a
// client keeps a connection open: four idle keep-alive connections were enough to starve a
// four-thread pool, /api/v1/health included. Here, with or without TLS alike:
//   - a pool of `threads` workers, each serving one connection at a time;
//   - at most `max_connections` connections served or waiting; beyond, a new connection is
//     answered 503 at once by the accepting thread and closed (counted; over TLS the 503 is
//     not sent: the accepting thread does no handshake, it closes the connection);
//   - a connection idle before a request (none sent yet, or between keep-alive requests) gives
//     its worker up as soon as another connection waits, after a short grace, and is closed
//     after `idle_timeout_ms` in any case;
//   - a request must arrive whole within `request_timeout_ms` (a client trickling its headers
//     is cut off: counted), and each read or write waits at most `io_timeout_ms`;
//   - over TLS, the handshake too must end within `request_timeout_ms`; a failed handshake is
//     counted, and a plain HTTP request to the TLS port is answered 400 in plain text (telling
//     the client to use https) and closed.
// Sits between the listening socket and service/http_api.h (the routes).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace httplib {
class Server;
}

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

// HTTPS: a PEM certificate (chain) and its PEM private key. Both empty: plain HTTP.
struct TlsFiles {
  std::string cert_file;
  std::string key_file;
  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// Live counts for /metrics and /api/v1/ingest.
struct HttpCounters {
  std::atomic<int64_t> open{0};  // connections served or waiting
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};      // over max_connections: 503
  std::atomic<uint64_t> idle_closed{0};  // idle past idle_timeout_ms, or yielded to others
  std::atomic<uint64_t> slow_closed{0};  // request not whole within request_timeout_ms
  std::atomic<uint64_t> tls_failed{0};   // TLS handshake failed or timed out, or plain HTTP
};

// The server, plain or TLS (made by MakeHttpServer); routes are installed on server().
class HttpServer {
 public:
  virtual ~HttpServer();

  virtual httplib::Server& server() = 0;
  bool tls() const { return tls_; }
  const HttpCounters& counters() const { return counters_; }
  const HttpLimits& limits() const { return limits_; }

  class Pool;  // the bounded worker pool (http_server.cc)

 protected:
  HttpServer(const HttpLimits& limits, bool tls) : limits_(limits), tls_(tls) {}

  HttpLimits limits_;
  bool tls_;
  HttpCounters counters_;
  std::atomic<Pool*> pool_{nullptr};  // set while listening
};

// Plain HTTP when `tls` is empty, else HTTPS (TLS 1.2 or later) with its certificate and key.
// Errors (kInvalidArgument) name the option and file: one given without the other, a file that
// cannot be read, not PEM, or a key that does not match the certificate (with OpenSSL's reason).
StatusOr<std::unique_ptr<HttpServer>> MakeHttpServer(const HttpLimits& limits,
                                                     const TlsFiles& tls);

}  // namespace prism::service
