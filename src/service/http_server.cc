#include "service/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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
// timeout and, while a request is being read, by that request's deadline.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(socket_t sock, const HttpLimits& limits) : sock_(sock), limits_(limits) {}

  void StartRequest() {
    deadline_ms_ = NowMs() + limits_.request_timeout_ms;
    deadline_hit_ = false;
  }
  void EndRequest() { deadline_ms_ = 0; }
  bool deadline_hit() const { return deadline_hit_; }
  bool has_buffered() const { return off_ < len_; }

  bool is_readable() const override { return has_buffered() || Wait(POLLIN); }
  bool is_writable() const override { return Wait(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (!has_buffered()) {
      if (!Wait(POLLIN)) return -1;
      if (size >= sizeof buf_) return ::recv(sock_, ptr, size, 0);
      const ssize_t n = ::recv(sock_, buf_, sizeof buf_, 0);
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
    if (!Wait(POLLOUT)) return -1;
    return ::send(sock_, ptr, size, MSG_NOSIGNAL);
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

 private:
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
  int64_t deadline_ms_ = 0;
  mutable bool deadline_hit_ = false;
  char buf_[4096];
  size_t off_ = 0, len_ = 0;
};

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

HttpServer::HttpServer(const HttpLimits& limits) : limits_(limits) {
  new_task_queue = [this] { return new Pool(limits_, &counters_, &pool_); };
  set_payload_max_length(1 << 16);
}

HttpServer::~HttpServer() = default;

bool HttpServer::process_and_close_socket(socket_t sock) {
  if (t_refuse_connection) {
    // The accepting thread: answer without waiting (a client that does not read gets nothing).
    static constexpr char kBusy[] =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        "Content-Length: 47\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
        "{\"error\": \"too many connections, retry later\"}";
    ++counters_.refused;
    (void)::send(sock, kBusy, sizeof kBusy - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return true;
  }
  ++counters_.accepted;
  ConnectionStream stream(sock, limits_);
  for (int left = kKeepAliveMaxRequests; left > 0; --left) {
    // Idle: wait for the next request, giving the worker up to waiting connections.
    const int64_t idle_since = NowMs();
    bool ready = stream.has_buffered();
    while (!ready) {
      if (svr_sock_ == INVALID_SOCKET) break;  // stop()
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
    bool connection_closed = false;
    const bool ok = process_request(stream, /*close_connection=*/left == 1, connection_closed,
                                    [](httplib::Request&) {});
    stream.EndRequest();
    if (stream.deadline_hit()) {
      ++counters_.slow_closed;
      break;
    }
    if (!ok || connection_closed) break;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return true;
}

}  // namespace prism::service
