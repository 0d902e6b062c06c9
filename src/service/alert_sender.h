// File: service/alert_sender.h
// Delivers the alerts service/alerts.h decides on to one or more Alertmanagers (POST
// /api/v2/alerts, cpp-httplib client) from its own thread, so analysis never waits on the network.
// Per Alertmanager, alerts waiting to be posted are kept by label set, the newest version of each
// winning: a slow or unreachable Alertmanager costs at most one entry per alert, and a resolution
// that could not be delivered is sent again with the next attempt (on the next window, or after
// the retry interval) instead of being lost. Each POST is bounded by connect and read/write
// timeouts. Failures are counted (/metrics) and logged with the URL and the HTTP status or
// connection error, never fatal.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "service/alerts.h"

namespace prism::service {

struct AlertmanagerUrl {
  std::string base;         // "http://host:port" or "https://host:port", for httplib::Client
  std::string path_prefix;  // "" or e.g. "/alertmanager" (behind a reverse proxy)
};

// "http[s]://HOST[:PORT][/PREFIX]"; kInvalidArgument naming what is wrong.
StatusOr<AlertmanagerUrl> ParseAlertmanagerUrl(const std::string& url);

struct AlertSenderOptions {
  std::vector<std::string> urls;
  int64_t connect_timeout_ms = 2000;
  int64_t io_timeout_ms = 5000;  // read and write, each
  int64_t retry_interval_ms = 10000;
  size_t max_pending_alerts = 10000;  // per Alertmanager; beyond, new alerts are dropped, counted
};

// One Alertmanager's delivery counters (/metrics).
struct AlertTarget {
  std::string url;
  AlertmanagerUrl parsed;
  std::atomic<uint64_t> posts_ok{0}, posts_failed{0};
  std::atomic<uint64_t> alerts_firing{0}, alerts_resolved{0};  // delivered
  std::atomic<uint64_t> alerts_dropped{0};
  std::atomic<int> last_status{0};  // HTTP status of the last attempt; 0 = no response
};

class AlertSender {
 public:
  static StatusOr<std::unique_ptr<AlertSender>> Start(const AlertSenderOptions& options);
  ~AlertSender();
  AlertSender(const AlertSender&) = delete;
  AlertSender& operator=(const AlertSender&) = delete;

  // Queues the alerts for every Alertmanager and returns at once.
  void Post(const std::vector<Alert>& alerts);
  // One last attempt at whatever is waiting (bounded by the timeouts), then the thread ends.
  void Stop();

  const std::vector<std::unique_ptr<AlertTarget>>& targets() const { return targets_; }

 private:
  explicit AlertSender(const AlertSenderOptions& options) : options_(options) {}
  void Run();
  // Posts what `target` has waiting; false (and the alerts back in waiting) when it failed.
  bool Deliver(size_t target);

  AlertSenderOptions options_;
  std::vector<std::unique_ptr<AlertTarget>> targets_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::map<std::string, Alert>> pending_;  // per target, by label set
  std::vector<int64_t> last_log_ns_;                   // per target (Run's thread only)
  bool dirty_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace prism::service
