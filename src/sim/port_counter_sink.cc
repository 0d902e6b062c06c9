#include "sim/port_counter_sink.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

namespace prism::sim {
namespace {

using counters::CounterKind;
using counters::CountersBuilder;
using counters::CountersData;
using counters::PortNic;
using counters::PortTopology;

std::string PortName(int endpoint) {
  return fmt::format("Ethernet1/{}", endpoint / kGpusPerHost);
}
std::string NicName(int endpoint) { return fmt::format("nic{}", endpoint % kGpusPerHost); }

}  // namespace

PortCounterSink::PortCounterSink(const Cluster* cluster, int64_t start_ns, int64_t end_ns,
                                 double resolution_s)
    : cluster_(cluster), start_ns_(start_ns), end_ns_(end_ns), res_ns_(resolution_s * 1e9) {
  bins_ = static_cast<size_t>(std::ceil((end_ns - start_ns) / res_ns_)) + 1;
  for (int e = 0; e < cluster->num_gpus(); ++e) endpoint_of_[cluster->Ip(e)] = e;
  in_.resize(cluster->num_gpus());
  out_.resize(cluster->num_gpus());
}

void PortCounterSink::OnRecord(const FlowRecord& r) {
  auto add = [&](const IpAddr& ip, std::vector<std::vector<float>>* dir) {
    auto it = endpoint_of_.find(ip);
    if (it == endpoint_of_.end()) return;
    std::vector<float>& v = (*dir)[it->second];
    if (v.empty()) v.assign(bins_, 0);
    const double a = static_cast<double>(std::max(r.start_ns, start_ns_) - start_ns_);
    const double b = static_cast<double>(std::min(std::max(r.end_ns, r.start_ns), end_ns_) - start_ns_);
    if (b < a) return;
    if (b == a) {
      v[std::min(bins_ - 1, static_cast<size_t>(a / res_ns_))] += static_cast<float>(r.bytes);
      return;
    }
    const double rate = static_cast<double>(r.bytes) / (b - a);
    for (double lo = a; lo < b;) {
      size_t k = static_cast<size_t>(lo / res_ns_);
      double hi = std::min(b, (k + 1) * res_ns_);
      v[std::min(bins_ - 1, k)] += static_cast<float>(rate * (hi - lo));
      lo = hi;
    }
  };
  add(r.src, &in_);
  add(r.dst, &out_);
  bytes_ += r.bytes;
}

CountersData PortCounterSink::Poll(const PollOptions& o) const {
  CountersBuilder builder(CounterKind::kCumulative, nullptr);
  PollCumulative(o, [&](int e, int64_t ts_ns, uint64_t in_bytes, uint64_t out_bytes) {
    builder.Add(cluster_->SwitchName(cluster_->LeafOf(e)), PortName(e), ts_ns / 1'000'000,
                in_bytes, out_bytes);
  });
  return builder.Finish();
}

void PortCounterSink::PollCumulative(const PollOptions& o, const PollCallback& on_poll) const {
  std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + 17);
  std::normal_distribution<double> jitter(0, o.poll_jitter);
  std::uniform_real_distribution<double> unit(0, 1);
  const double poll_ns = o.poll_s * 1e9, refresh_ns = o.refresh_s * 1e9;
  for (int e = 0; e < cluster_->num_gpus(); ++e) {
    if (in_[e].empty() && out_[e].empty()) continue;
    // Cumulative bytes at bin edges.
    auto prefix = [&](const std::vector<float>& v) {
      std::vector<double> p(bins_ + 1, 0);
      for (size_t i = 0; i < bins_ && !v.empty(); ++i) p[i + 1] = p[i] + v[i];
      return p;
    };
    const std::vector<double> pin = prefix(in_[e]), pout = prefix(out_[e]);
    auto at = [&](const std::vector<double>& p, double t_ns) {  // interpolated within a bin
      double x = std::clamp(t_ns / res_ns_, 0.0, static_cast<double>(bins_));
      size_t k = std::min(bins_ - 1, static_cast<size_t>(x));
      return p[k] + (p[k + 1] - p[k]) * (x - static_cast<double>(k));
    };
    const double phase = refresh_ns > 0 ? unit(rng) * refresh_ns : 0;
    const double span = static_cast<double>(end_ns_ - start_ns_);
    for (double t = unit(rng) * poll_ns; t < span;
         t += std::max(0.2, 1 + jitter(rng)) * poll_ns) {
      // The value the switch last refreshed: at the latest refresh instant <= t.
      double tr = t;
      if (refresh_ns > 0) {
        if (t < phase) continue;
        tr = phase + std::floor((t - phase) / refresh_ns) * refresh_ns;
      }
      on_poll(e, start_ns_ + static_cast<int64_t>(t),
              static_cast<uint64_t>(std::llround(at(pin, tr))),
              static_cast<uint64_t>(std::llround(at(pout, tr))));
    }
  }
}

PortTopology PortCounterSink::Topology() const {
  return Topology([&](int e) {
    return std::make_pair(cluster_->SwitchName(cluster_->LeafOf(e)), PortName(e));
  });
}

PortTopology PortCounterSink::Topology(const PortNamer& port_of) const {
  PortTopology topo;
  for (int e = 0; e < cluster_->num_gpus(); ++e) {
    topo[port_of(e)] =
        PortNic{cluster_->HostName(cluster_->HostOf(e)), cluster_->Ip(e).ToString(), NicName(e)};
  }
  return topo;
}

}  // namespace prism::sim
