#include "ingest/ipfix/udp_collector.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace prism::ingest {

StatusOr<std::unique_ptr<UdpCollector>> UdpCollector::Start(const UdpCollectorOptions& options,
                                                            FlowSink* sink, PointTable* points) {
  std::unique_ptr<UdpCollector> c(new UdpCollector());
  sockaddr_storage ss{};
  socklen_t ss_len = 0;
  in_addr a4{};
  in6_addr a6{};
  int family;
  if (inet_pton(AF_INET, options.bind_address.c_str(), &a4) == 1) {
    family = AF_INET;
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    sin->sin_family = AF_INET;
    sin->sin_addr = a4;
    sin->sin_port = htons(options.port);
    ss_len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, options.bind_address.c_str(), &a6) == 1) {
    family = AF_INET6;
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_addr = a6;
    sin6->sin6_port = htons(options.port);
    ss_len = sizeof(sockaddr_in6);
  } else {
    return MakeError(ErrorCode::kInvalidArgument, "collector: bad bind address '{}'",
                     options.bind_address);
  }
  c->fd_ = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (c->fd_ < 0) {
    return MakeError(ErrorCode::kInternal, "collector: socket: {}", std::strerror(errno));
  }
  const int rcvbuf = options.receive_buffer_bytes;
  if (setsockopt(c->fd_, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0) {
    setsockopt(c->fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  }
  int granted = 0;
  socklen_t granted_len = sizeof(granted);
  getsockopt(c->fd_, SOL_SOCKET, SO_RCVBUF, &granted, &granted_len);
  c->receive_buffer_bytes_ = granted / 2;  // the kernel doubles it for its own bookkeeping
  if (bind(c->fd_, reinterpret_cast<sockaddr*>(&ss), ss_len) != 0) {
    return MakeError(ErrorCode::kInternal, "collector: cannot bind {} port {}: {}",
                     options.bind_address, options.port, std::strerror(errno));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  getsockname(c->fd_, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  c->port_ = family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port)
                               : ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  c->max_queued_ = std::max<size_t>(1, options.max_queued_datagrams);
  c->on_datagram_ = options.on_datagram;
  c->allowed_ = options.allowed_sources;
  c->sink_ = sink;
  c->points_ = points;
  const std::string name = fmt::format("collector {}:{}", options.bind_address, c->port_);
  if (options.protocol == UdpProtocol::kSflow) {
    PacketFlowOptions flows = options.sflow_flows;
    flows.capture_point.clear();
    c->sflow_packets_ =
        std::make_unique<PacketFlowBuilder>(flows, sink, points, &c->decoder_stats_);
    c->sflow_ = std::make_unique<SflowDecoder>("sflow " + name, c->sflow_packets_.get(), points,
                                               &c->decoder_stats_);
  } else {
    c->decoder_ = std::make_unique<ExportDecoder>(name, sink, points, &c->decoder_stats_,
                                                  /*problem_log_cap=*/5, options.templates);
  }
  c->thread_ = std::thread([raw = c.get()] { raw->Receive(); });
  return c;
}

UdpCollector::~UdpCollector() {
  Stop();
  if (fd_ >= 0) close(fd_);
}

void UdpCollector::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void UdpCollector::Receive() {
  std::vector<uint8_t> buf(65536);
  while (!stop_.load()) {
    pollfd pfd{fd_, POLLIN, 0};
    int rc = poll(&pfd, 1, 50);
    if (rc <= 0) continue;
    sockaddr_storage from{};
    socklen_t from_len = sizeof(from);
    ssize_t n = recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from),
                         &from_len);
    if (n < 0) continue;
    Datagram d;
    d.received_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
    d.received_wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    if (from.ss_family == AF_INET) {
      auto* sin = reinterpret_cast<sockaddr_in*>(&from);
      d.from = IpAddr::FromV4(ntohl(sin->sin_addr.s_addr));
      d.port = ntohs(sin->sin_port);
    } else {
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(&from);
      d.from = IpAddr::FromV6(sin6->sin6_addr.s6_addr);
      d.port = ntohs(sin6->sin6_port);
    }
    if (!allowed_.empty() &&
        std::none_of(allowed_.begin(), allowed_.end(),
                     [&](const IpPrefix& p) { return p.Contains(d.from); })) {
      refused_.fetch_add(1);
      continue;
    }
    received_.fetch_add(1);
    d.data.assign(buf.begin(), buf.begin() + n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.size() >= max_queued_) {
        dropped_.fetch_add(1);
        continue;
      }
      queue_.push_back(std::move(d));
    }
    cv_.notify_one();
  }
}

size_t UdpCollector::Drain(std::chrono::milliseconds wait, Stats* stats) {
  std::deque<Datagram> batch;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait, [this] { return !queue_.empty(); });
    batch.swap(queue_);
  }
  for (const Datagram& d : batch) {
    std::span<const uint8_t> data(d.data);
    if (sflow_) {
      if (!LooksLikeSflowDatagram(data, data.size())) {
        decoder_stats_.Add(Stat::sflow_collector_bad_datagram);
        continue;
      }
      if (on_datagram_) on_datagram_(data);
      sflow_->DecodeDatagram(data, d.received_wall_ns);
      continue;
    }
    if (!LooksLikeExportDatagram(data, data.size())) {
      decoder_stats_.Add(Stat::collector_bad_datagram);
      continue;
    }
    uint32_t exporter = decoder_->AddExporter(d.from, d.port, d.from.ToString());
    decoder_->SetClock(d.received_ns);
    if (on_datagram_) on_datagram_(data);
    decoder_->DecodeMessage(data, exporter, 0);
  }
  if (sflow_packets_ && stop_.load()) {
    // The last Drain after Stop: what is still open is all there will be.
    sflow_packets_->Finish();
    sflow_->Finish();
  } else if (sflow_packets_) {
    // Flowlets whose stream went quiet end now, not when its next sample comes (or never).
    sflow_packets_->AdvanceTo(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
  }
  decoder_stats_.Add(Stat::collector_datagrams_dropped, dropped_.exchange(0));
  if (stats != nullptr) stats->Merge(decoder_stats_);
  decoder_stats_ = Stats();
  return batch.size();
}

}  // namespace prism::ingest
