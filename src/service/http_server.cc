#include "service/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace prism::service {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Set on the accepting thread while it answers a connection the pool has no room for.
thread_local bool t_refuse_connection = false;

constexpr int kKeepAliveMaxRequests = 100;
constexpr int64_t kPollSliceMs = 50;  // how often an idle wait looks at the pool and at stop()

std::string AddressString(const sockaddr_storage& a, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    *port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    *port = ntohs(v6->sin6_port);
  }
  return buf;
}

// One connection's socket as httplib sees it: buffered reads, and every wait bounded by the I/O
// timeout and, while a request is being read, by that request's deadline. Over TLS (`ssl` set,
// the socket non-blocking) reads and writes go through OpenSSL, waiting with the same bounds
// whenever it wants the socket readable or writable.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(socket_t sock, const HttpLimits& limits, SSL* ssl)
      : sock_(sock), limits_(limits), ssl_(ssl) {}

  void StartRequest() {
    deadline_ms_ = NowMs() + limits_.request_timeout_ms;
    deadline_hit_ = false;
  }
  void EndRequest() { deadline_ms_ = 0; }
  bool deadline_hit() const { return deadline_hit_; }
  // Bytes received and not yet read: in this buffer, or decrypted and held by OpenSSL.
  bool has_buffered() const {
    return off_ < len_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0);
  }

  bool is_readable() const override { return has_buffered() || Wait(POLLIN); }
  bool is_writable() const override { return Wait(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ == len_) {
      if (size >= sizeof buf_) return Receive(ptr, size);
      const ssize_t n = Receive(buf_, sizeof buf_);
      if (n <= 0) return n;
      off_ = 0;
      len_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, len_ - off_);
    std::memcpy(ptr, buf_ + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (ssl_ == nullptr) {
      if (!Wait(POLLOUT)) return -1;
      return ::send(sock_, ptr, size, MSG_NOSIGNAL);
    }
    for (;;) {
      const int n = SSL_write(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) return n;
      if (!WaitFor(SSL_get_error(ssl_, n))) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    port = 0;
    if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      ip = AddressString(a, &port);
    }
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    port = 0;
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      ip = AddressString(a, &port);
    }
  }
  socket_t socket() const override { return sock_; }

  // Server side of the TLS handshake, bounded by the request deadline (StartRequest first).
  bool Handshake() {
    for (;;) {
      const int r = SSL_accept(ssl_);
      if (r == 1) return true;
      if (!WaitFor(SSL_get_error(ssl_, r))) return false;
    }
  }

 private:
  // Plain: waits, then one recv. TLS: SSL_read, waiting as OpenSSL asks.
  ssize_t Receive(char* ptr, size_t size) {
    if (ssl_ == nullptr) {
      if (!Wait(POLLIN)) return -1;
      return ::recv(sock_, ptr, size, 0);
    }
    for (;;) {
      const int n = SSL_read(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) return n;
      const int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_ZERO_RETURN) return 0;  // the peer closed the TLS session
      if (!WaitFor(err)) return -1;
    }
  }

  // After an OpenSSL call returned `ssl_error`: waits for what it wants; false on any other
  // error, or when the wait times out.
  bool WaitFor(int ssl_error) const {
    if (ssl_error == SSL_ERROR_WANT_READ) return Wait(POLLIN);
    if (ssl_error == SSL_ERROR_WANT_WRITE) return Wait(POLLOUT);
    ERR_clear_error();  // the thread's error queue must not leak into the next connection
    return false;
  }

  // Waits for `events` up to the I/O timeout, and for reads up to the request's deadline.
  bool Wait(short events) const {
    int64_t wait_ms = limits_.io_timeout_ms;
    if (events == POLLIN && deadline_ms_ != 0) {
      const int64_t left = deadline_ms_ - NowMs();
      if (left <= 0) {
        deadline_hit_ = true;
        return false;
      }
      wait_ms = std::min(wait_ms, left);
    }
    pollfd p{sock_, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(wait_ms));
    if (r == 0 && events == POLLIN && deadline_ms_ != 0 && NowMs() >= deadline_ms_) {
      deadline_hit_ = true;
    }
    return r > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }

  socket_t sock_;
  const HttpLimits& limits_;
  SSL* ssl_;
  int64_t deadline_ms_ = 0;
  mutable bool deadline_hit_ = false;
  char buf_[4096];
  size_t off_ = 0, len_ = 0;
};

// Whether the first bytes a client sent over the TLS port look like plain HTTP (a request line
// begins with an upper-case method; a TLS connection begins with a handshake record, 0x16).
bool LooksLikePlainHttp(socket_t sock) {
  char head[4] = {};
  const ssize_t n = ::recv(sock, head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
  if (n <= 0) return false;
  for (ssize_t i = 0; i < n; ++i) {
    if (!std::isupper(static_cast<unsigned char>(head[i])) && head[i] != ' ') return false;
  }
  return true;
}

}  // namespace

// N workers; connections beyond max_connections (served + waiting) are refused by the
// accepting thread itself, which runs the connection's task with t_refuse_connection set.
class HttpServer::Pool final : public httplib::TaskQueue {
 public:
  Pool(const HttpLimits& limits, HttpCounters* counters, std::atomic<Pool*>* registered)
      : limits_(limits), counters_(counters), registered_(registered) {
    for (int i = 0; i < std::max(1, limits.threads); ++i) {
      threads_.emplace_back([this] { Work(); });
    }
    registered_->store(this);
  }
  ~Pool() override { registered_->store(nullptr); }

  void enqueue(std::function<void()> fn) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (active_ + static_cast<int>(jobs_.size()) >= limits_.max_connections) {
        lock.unlock();
        t_refuse_connection = true;
        fn();
        t_refuse_connection = false;
        return;
      }
      jobs_.push_back(std::move(fn));
      waiting_.store(static_cast<int>(jobs_.size()));
      counters_->open.store(active_ + static_cast<int64_t>(jobs_.size()));
    }
    cv_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Connections accepted and waiting for a worker.
  int waiting() const { return waiting_.load(); }

 private:
  void Work() {
    // A TLS write to a peer that has gone raises SIGPIPE (OpenSSL writes with write(2), not
    // send(MSG_NOSIGNAL)); blocked on the workers, it leaves the write failing with EPIPE.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, nothing left
        fn = std::move(jobs_.front());
        jobs_.pop_front();
        ++active_;
        waiting_.store(static_cast<int>(jobs_.size()));
      }
      fn();
      std::lock_guard<std::mutex> lock(mu_);
      --active_;
      counters_->open.store(active_ + static_cast<int64_t>(jobs_.size()));
    }
  }

  HttpLimits limits_;
  HttpCounters* counters_;
  std::atomic<Pool*>* registered_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  int active_ = 0;
  std::atomic<int> waiting_{0};
  bool stop_ = false;
};

HttpServer::~HttpServer() = default;

namespace {

// A complete response with a JSON body, its length counted here.
std::string JsonResponse(std::string_view status, std::string_view headers,
                         std::string_view body) {
  return fmt::format("HTTP/1.1 {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
                     "{}Connection: close\r\n\r\n{}",
                     status, body.size(), headers, body);
}

// Refused over max_connections (plain HTTP; over TLS the connection is closed unanswered).
const std::string& BusyResponse() {
  static const std::string r = JsonResponse("503 Service Unavailable", "Retry-After: 1\r\n",
                                            R"({"error": "too many connections, retry later"})");
  return r;
}
// Plain HTTP sent to the TLS port.
const std::string& PlainToTlsResponse() {
  static const std::string r = JsonResponse(
      "400 Bad Request", "", R"({"error": "this port speaks HTTPS: use https:// to reach it"})");
  return r;
}

// Answers a plain HTTP client on the TLS port and lets the answer reach it: what it sent is
// read first (closing with unread data would reset the connection and lose the answer).
void AnswerPlainHttp(socket_t sock) {
  char sink[4096];
  while (::recv(sock, sink, sizeof sink, MSG_DONTWAIT) > 0) {
  }
  const std::string& answer = PlainToTlsResponse();
  (void)::send(sock, answer.data(), answer.size(), MSG_NOSIGNAL);
  ::shutdown(sock, SHUT_WR);
  pollfd p{sock, POLLIN, 0};
  for (int i = 0; i < 4 && ::poll(&p, 1, 50) > 0; ++i) {
    if (::recv(sock, sink, sizeof sink, MSG_DONTWAIT) <= 0) break;
  }
}

// httplib::Server or httplib::SSLServer with the bounded connection handling above: the
// library's routing, parsing and (for SSLServer) TLS context; this class's pool, limits and
// per-connection loop, the same for both.
template <class Base>
class BoundedServer final : public HttpServer, public Base {
 public:
  static constexpr bool kTls = std::is_base_of_v<httplib::SSLServer, Base>;

  template <class... Args>
  explicit BoundedServer(const HttpLimits& limits, Args&&... base_args)
      : HttpServer(limits, kTls), Base(std::forward<Args>(base_args)...) {
    this->new_task_queue = [this] { return new Pool(limits_, &counters_, &pool_); };
    this->set_payload_max_length(1 << 16);
  }

  httplib::Server& server() override { return *this; }

 private:
  bool process_and_close_socket(socket_t sock) override;
};

template <class Base>
bool BoundedServer<Base>::process_and_close_socket(socket_t sock) {
  if (t_refuse_connection) {
    // The accepting thread: answer without waiting (a client that does not read gets nothing).
    ++counters_.refused;
    if constexpr (!kTls) {
      const std::string& busy = BusyResponse();
      (void)::send(sock, busy.data(), busy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return true;
  }
  ++counters_.accepted;
  SSL* ssl = nullptr;
  if constexpr (kTls) {
    // Non-blocking: every OpenSSL read and write returns at once and the stream waits, bounded.
    ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
    ssl = SSL_new(this->ssl_context());
    if (ssl == nullptr || SSL_set_fd(ssl, sock) != 1) {
      ERR_clear_error();
      ++counters_.tls_failed;
      if (ssl != nullptr) SSL_free(ssl);
      ::close(sock);
      return true;
    }
  }
  ConnectionStream stream(sock, limits_, ssl);
  bool handshaken = !kTls;
  for (int left = kKeepAliveMaxRequests; left > 0;) {
    // Idle: wait for the next request (or, over TLS, the handshake), giving the worker up to
    // waiting connections.
    const int64_t idle_since = NowMs();
    bool ready = stream.has_buffered();
    while (!ready) {
      if (this->svr_sock_ == INVALID_SOCKET) break;  // stop()
      const int64_t idle_ms = NowMs() - idle_since;
      if (idle_ms >= limits_.idle_timeout_ms) break;
      Pool* pool = pool_.load();
      if (idle_ms >= limits_.idle_grace_ms && pool != nullptr && pool->waiting() > 0) break;
      pollfd p{sock, POLLIN, 0};
      ready = ::poll(&p, 1, static_cast<int>(std::min(kPollSliceMs, limits_.idle_timeout_ms))) > 0;
    }
    if (!ready) {
      ++counters_.idle_closed;
      break;
    }
    stream.StartRequest();
    if (!handshaken) {
      // The handshake is bounded like a request; then the connection is idle until one comes.
      if (LooksLikePlainHttp(sock)) {
        ++counters_.tls_failed;
        AnswerPlainHttp(sock);
        break;
      }
      handshaken = stream.Handshake();
      stream.EndRequest();
      if (!handshaken) {
        ++(stream.deadline_hit() ? counters_.slow_closed : counters_.tls_failed);
        break;
      }
      continue;
    }
    bool connection_closed = false;
    const bool ok = this->process_request(stream, /*close_connection=*/left == 1,
                                          connection_closed, [ssl](httplib::Request& req) {
                                            if constexpr (kTls) req.ssl = ssl;
                                          });
    --left;
    stream.EndRequest();
    if (stream.deadline_hit()) {
      ++counters_.slow_closed;
      break;
    }
    if (!ok || connection_closed) break;
  }
  if (ssl != nullptr) {
    if (handshaken) (void)SSL_shutdown(ssl);  // close_notify, not waiting for the peer's
    SSL_free(ssl);
    ERR_clear_error();
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return true;
}

// OpenSSL's reasons for the last failure, emptying the thread's error queue.
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += out.empty() ? buf : std::string("; ") + buf;
  }
  return out.empty() ? "no reason given" : out;
}

Status CheckReadable(const char* option, const std::string& path) {
  if (path.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "{} is missing: HTTPS needs both --tls-cert "
                     "and --tls-key", option);
  }
  std::ifstream in(path, std::ios::binary);
  char c;
  if (!in || !in.get(c)) {
    return MakeError(ErrorCode::kInvalidArgument, "{} {}: cannot read it ({})", option, path,
                     in ? "empty" : std::strerror(errno));
  }
  return {};
}

}  // namespace

StatusOr<std::unique_ptr<HttpServer>> MakeHttpServer(const HttpLimits& limits,
                                                     const TlsFiles& tls) {
  if (!tls.enabled()) return std::make_unique<BoundedServer<httplib::Server>>(limits);
  PRISM_RETURN_IF_ERROR(CheckReadable("--tls-cert", tls.cert_file));
  PRISM_RETURN_IF_ERROR(CheckReadable("--tls-key", tls.key_file));
  std::string error;
  auto setup = [&](SSL_CTX& ctx) {
    ERR_clear_error();
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(&ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // An encrypted key would make OpenSSL prompt on the terminal; refuse it instead.
    SSL_CTX_set_default_passwd_cb(&ctx, [](char*, int, int, void*) { return 0; });
    if (SSL_CTX_use_certificate_chain_file(&ctx, tls.cert_file.c_str()) != 1) {
      error = fmt::format("--tls-cert {}: not a PEM certificate ({})", tls.cert_file,
                          OpenSslErrors());
      return false;
    }
    if (SSL_CTX_use_PrivateKey_file(&ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      // OpenSSL checks the key against the certificate as it loads it.
      const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
      error = mismatch ? fmt::format("--tls-key {}: does not match the certificate of "
                                     "--tls-cert {} ({})",
                                     tls.key_file, tls.cert_file, OpenSslErrors())
                       : fmt::format("--tls-key {}: not an unencrypted PEM private key ({})",
                                     tls.key_file, OpenSslErrors());
      return false;
    }
    if (SSL_CTX_check_private_key(&ctx) != 1) {
      error = fmt::format("--tls-key {}: does not match the certificate of --tls-cert {} ({})",
                          tls.key_file, tls.cert_file, OpenSslErrors());
      return false;
    }
    return true;
  };
  auto server = std::make_unique<BoundedServer<httplib::SSLServer>>(
      limits, std::function<bool(SSL_CTX&)>(setup));
  if (!server->is_valid()) {
    return MakeError(ErrorCode::kInvalidArgument, "{}",
                     error.empty() ? "HTTPS: cannot create the TLS context (" + OpenSslErrors() + ")"
                                   : error);
  }
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace prism::service
