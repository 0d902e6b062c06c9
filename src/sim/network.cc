#include "sim/network.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace prism::sim {
namespace {

constexpr int64_t kLatencyNs = 3'000;  // NIC + two switch hops, rounded

}  // namespace

double Network::FaultFactor(int switch_a, int switch_b, int64_t t) const {
  double f = 1;
  for (const auto& fault : faults_) {
    if (t < fault.start_ns || t >= fault.end_ns || fault.endpoint >= 0) continue;
    bool hit = fault.switch_b < 0 ? (fault.switch_a == switch_a || fault.switch_a == switch_b)
                                  : (fault.switch_a == switch_a && fault.switch_b == switch_b);
    if (hit) f = std::max(f, fault.factor);
  }
  return f;
}

double Network::NicFaultFactor(int endpoint, int64_t t) const {
  double f = 1;
  for (const auto& fault : faults_)
    if (fault.endpoint == endpoint && t >= fault.start_ns && t < fault.end_ns)
      f = std::max(f, fault.factor);
  return f;
}

bool Network::Touches(int src, int dst, const Route& r, int64_t start_ns, int64_t end_ns,
                      const CapacityFault& f) const {
  if (end_ns < f.start_ns || start_ns >= f.end_ns) return false;
  if (f.endpoint >= 0) return src == f.endpoint || dst == f.endpoint;
  if (f.switch_b < 0)
    return r.src_leaf == f.switch_a || r.dst_leaf == f.switch_a || r.spine == f.switch_a;
  return r.spine == f.switch_b && (r.src_leaf == f.switch_a || r.dst_leaf == f.switch_a);
}

double Network::FabricShare(uint64_t link, int64_t t, double capacity) const {
  auto it = load_.find((link << 24) | uint64_t(t / kBinNs));
  if (it == load_.end()) return capacity;
  const Load& l = it->second;
  // Max-min fair: what is left, but never less than an equal share among the flows present.
  return std::max(capacity - l.bytes_per_ns, capacity / (l.flows + 1));
}

void Network::AddLoad(uint64_t link, int64_t start_ns, int64_t end_ns, double rate) {
  for (int64_t bin = start_ns / kBinNs; bin <= end_ns / kBinNs; ++bin) {
    Load& l = load_[(link << 24) | uint64_t(bin)];
    l.bytes_per_ns += static_cast<float>(rate);
    if (l.flows < 65535) ++l.flows;
  }
}

std::vector<TransferResult> Network::Place(const std::vector<TransferRequest>& group) {
  std::vector<TransferResult> out(group.size());
  // Transfers of the group per NIC direction: they split the NIC evenly.
  std::map<std::pair<int, bool>, int> nic_users;
  std::map<uint64_t, int> fabric_users;
  for (size_t i = 0; i < group.size(); ++i) {
    const auto& t = group[i];
    out[i].route = cluster_->RouteFor(t.src, t.dst, t.qp);
    ++nic_users[{t.src, true}];
    ++nic_users[{t.dst, false}];
    if (out[i].route.spine >= 0) {
      ++fabric_users[LinkKey(out[i].route.src_leaf, out[i].route.spine, true)];
      ++fabric_users[LinkKey(out[i].route.dst_leaf, out[i].route.spine, false)];
    }
  }
  std::vector<double> rates(group.size());
  for (size_t i = 0; i < group.size(); ++i) {
    const auto& t = group[i];
    const Route& r = out[i].route;
    double nic = cluster_->nic_bytes_per_ns();
    double rate = std::min(nic / NicFaultFactor(t.src, t.start_ns) / nic_users[{t.src, true}],
                           nic / NicFaultFactor(t.dst, t.start_ns) / nic_users[{t.dst, false}]);
    // A degraded leaf slows even flows that stay on it.
    rate /= FaultFactor(r.src_leaf, -1, t.start_ns);
    if (r.dst_leaf != r.src_leaf) rate = std::min(rate, nic / FaultFactor(r.dst_leaf, -1, t.start_ns));
    if (r.spine >= 0) {
      double cap = cluster_->fabric_bytes_per_ns();
      uint64_t up = LinkKey(r.src_leaf, r.spine, true);
      uint64_t down = LinkKey(r.dst_leaf, r.spine, false);
      double up_share = FabricShare(up, t.start_ns, cap) / fabric_users[up];
      double down_share = FabricShare(down, t.start_ns, cap) / fabric_users[down];
      if (congestion_log_) {
        // The link's own load, before any fault's capacity cut.
        const double squeezed_below = CongestionLog::kSqueezedShare * rate;
        congestion_log_->Note(r.src_leaf, r.spine, true, t.start_ns, t.bytes,
                              up_share < squeezed_below);
        congestion_log_->Note(r.dst_leaf, r.spine, false, t.start_ns, t.bytes,
                              down_share < squeezed_below);
      }
      up_share /= std::max(FaultFactor(r.src_leaf, r.spine, t.start_ns),
                           FaultFactor(r.spine, -1, t.start_ns));
      down_share /= std::max(FaultFactor(r.dst_leaf, r.spine, t.start_ns),
                             FaultFactor(r.spine, -1, t.start_ns));
      rate = std::min({rate, up_share, down_share});
    }
    rates[i] = rate;
    out[i].end_ns = t.start_ns + kLatencyNs + static_cast<int64_t>(std::ceil(t.bytes / rate));
  }
  for (size_t i = 0; i < group.size(); ++i) {
    const Route& r = out[i].route;
    if (r.spine < 0) continue;
    AddLoad(LinkKey(r.src_leaf, r.spine, true), group[i].start_ns, out[i].end_ns, rates[i]);
    AddLoad(LinkKey(r.dst_leaf, r.spine, false), group[i].start_ns, out[i].end_ns, rates[i]);
  }
  return out;
}

}  // namespace prism::sim
