#include "service/alert_sender.h"

#include <chrono>
#include <cstdio>
#include <regex>

#include <fmt/format.h>
#include <httplib.h>

namespace prism::service {

namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string LabelSetKey(const Alert& a) {
  std::string k;
  for (const auto& [name, value] : a.labels) k += name + '\x1f' + value + '\x1e';
  return k;
}

constexpr int64_t kLogIntervalNs = 60'000'000'000;

}  // namespace

StatusOr<AlertmanagerUrl> ParseAlertmanagerUrl(const std::string& url) {
  static const std::regex kUrl(
      R"(^(https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?(/.*)?$)");
  std::smatch m;
  if (!std::regex_match(url, m, kUrl)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "--alertmanager '{}': expected http://HOST[:PORT][/PREFIX] or https://...",
                     url);
  }
  if (m[3].matched && std::stoi(m[3].str().substr(1)) > 65535) {
    return MakeError(ErrorCode::kInvalidArgument, "--alertmanager '{}': port above 65535", url);
  }
  AlertmanagerUrl u;
  u.base = m[1].str() + "://" + m[2].str() + m[3].str();
  u.path_prefix = m[4].str();
  while (!u.path_prefix.empty() && u.path_prefix.back() == '/') u.path_prefix.pop_back();
  return u;
}

StatusOr<std::unique_ptr<AlertSender>> AlertSender::Start(const AlertSenderOptions& options) {
  std::unique_ptr<AlertSender> s(new AlertSender(options));
  for (const std::string& url : options.urls) {
    PRISM_ASSIGN_OR_RETURN(AlertmanagerUrl parsed, ParseAlertmanagerUrl(url));
    auto t = std::make_unique<AlertTarget>();
    t->url = url;
    t->parsed = std::move(parsed);
    s->targets_.push_back(std::move(t));
  }
  s->pending_.resize(s->targets_.size());
  s->last_log_ns_.assign(s->targets_.size(), INT64_MIN);
  s->thread_ = std::thread([p = s.get()] { p->Run(); });
  return s;
}

AlertSender::~AlertSender() { Stop(); }

void AlertSender::Post(const std::vector<Alert>& alerts) {
  if (alerts.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t t = 0; t < targets_.size(); ++t) {
      for (const Alert& a : alerts) {
        auto [it, inserted] = pending_[t].insert_or_assign(LabelSetKey(a), a);
        if (inserted && pending_[t].size() > options_.max_pending_alerts) {
          pending_[t].erase(it);
          ++targets_[t]->alerts_dropped;
        }
      }
    }
    dirty_ = true;
  }
  cv_.notify_all();
}

void AlertSender::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool AlertSender::Deliver(size_t t) {
  AlertTarget& target = *targets_[t];
  std::map<std::string, Alert> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(pending_[t]);
  }
  if (batch.empty()) return true;
  std::vector<Alert> alerts;
  alerts.reserve(batch.size());
  uint64_t resolved = 0;
  for (const auto& [key, a] : batch) {
    alerts.push_back(a);
    resolved += a.resolved ? 1 : 0;
  }
  const std::string body = AlertsToJson(alerts).dump();
  std::string error;
  int status = 0;
  try {
    httplib::Client cli(target.parsed.base);
    cli.set_connection_timeout(std::chrono::milliseconds(options_.connect_timeout_ms));
    cli.set_read_timeout(std::chrono::milliseconds(options_.io_timeout_ms));
    cli.set_write_timeout(std::chrono::milliseconds(options_.io_timeout_ms));
    auto res = cli.Post(target.parsed.path_prefix + "/api/v2/alerts", body, "application/json");
    if (!res) {
      error = "no response (" + httplib::to_string(res.error()) + ")";
    } else {
      status = res->status;
      if (status < 200 || status >= 300) {
        error = fmt::format("HTTP {}: {}", status, res->body.substr(0, 200));
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  target.last_status = status;
  if (error.empty()) {
    ++target.posts_ok;
    target.alerts_resolved += resolved;
    target.alerts_firing += alerts.size() - resolved;
    if (last_log_ns_[t] != INT64_MIN) {
      fmt::print(stderr, "llmprism serve: alertmanager {}: delivering again ({} alerts posted)\n",
                 target.url, alerts.size());
      last_log_ns_[t] = INT64_MIN;
    }
    return true;
  }
  ++target.posts_failed;
  // Back into waiting, unless a newer version of the same alert came in meanwhile.
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, a] : batch) {
      if (pending_[t].size() >= options_.max_pending_alerts && pending_[t].count(key) == 0) {
        ++dropped;
        continue;
      }
      pending_[t].try_emplace(key, std::move(a));
    }
  }
  target.alerts_dropped += dropped;
  const int64_t now = SteadyNs();
  if (last_log_ns_[t] == INT64_MIN || now - last_log_ns_[t] >= kLogIntervalNs) {
    fmt::print(stderr,
               "llmprism serve: alertmanager {}: POST /api/v2/alerts failed: {}; {} alerts kept "
               "for the next attempt ({} posts failed so far)\n",
               target.url, error, alerts.size() - dropped, target.posts_failed.load());
    last_log_ns_[t] = now;
  }
  return false;
}

void AlertSender::Run() {
  bool failing = false;
  while (true) {
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // After a failure, wake up to retry even when no new window posts.
      if (failing) {
        cv_.wait_for(lock, std::chrono::milliseconds(options_.retry_interval_ms),
                     [&] { return dirty_ || stop_; });
      } else {
        cv_.wait(lock, [&] { return dirty_ || stop_; });
      }
      dirty_ = false;
      stopping = stop_;
    }
    failing = false;
    for (size_t t = 0; t < targets_.size(); ++t) failing |= !Deliver(t);
    if (stopping) break;
  }
}

}  // namespace prism::service
