#include "sim/cluster.h"

#include <fmt/format.h>

namespace prism::sim {

Cluster::Cluster(const FabricConfig& config) : config_(config) {
  num_pods_ = (config.hosts + config.hosts_per_pod - 1) / config.hosts_per_pod;
  if (num_pods_ < 1) num_pods_ = 1;
}

IpAddr Cluster::Ip(int endpoint) const {
  if (IsStorage(endpoint)) {
    int i = endpoint - num_gpus();
    return IpAddr::FromV4((10u << 24) | (250u << 16) | (uint32_t(i / 250) << 8) | uint32_t(i % 250 + 1));
  }
  uint32_t host = static_cast<uint32_t>(HostOf(endpoint));
  uint32_t local = static_cast<uint32_t>(endpoint % kGpusPerHost);
  // 10.<host / 256>.<host % 256>.<local + 1>: up to 64k hosts.
  return IpAddr::FromV4((10u << 24) | ((host >> 8) << 16) | ((host & 255u) << 8) | (local + 1));
}

std::string Cluster::HostName(int host) const { return fmt::format("host{:05d}", host); }

int Cluster::LeafOf(int endpoint) const {
  if (IsStorage(endpoint)) return num_pods_ * kGpusPerHost;
  int pod = HostOf(endpoint) / config_.hosts_per_pod;
  return pod * kGpusPerHost + endpoint % kGpusPerHost;
}

std::string Cluster::SwitchName(int id) const {
  if (id >= num_leaves()) return fmt::format("spine{:02d}", id - num_leaves());
  if (id == num_pods_ * kGpusPerHost) return "leaf-storage";
  return fmt::format("leaf-p{:03d}-r{}", id / kGpusPerHost, id % kGpusPerHost);
}

int Cluster::FindSwitch(const std::string& name) const {
  for (int id = 0; id < num_switches(); ++id)
    if (SwitchName(id) == name) return id;
  return -1;
}

Route Cluster::RouteFor(int src, int dst, uint32_t qp) const {
  Route r;
  r.src_leaf = LeafOf(src);
  r.dst_leaf = LeafOf(dst);
  if (r.src_leaf != r.dst_leaf) {
    // ECMP: RoCEv2 hashes the 5-tuple, whose only entropy is the per-QP source port.
    uint64_t h = (uint64_t(qp) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(src) << 20) ^ uint64_t(dst);
    h ^= h >> 31;
    r.spine = SpineSwitch(static_cast<int>(h % uint64_t(config_.spines)));
  }
  return r;
}

Topology Cluster::MakeTopology() const {
  Topology topo;
  for (int e = 0; e < num_endpoints(); ++e) {
    EndpointInfo info;
    info.ip = Ip(e);
    info.leaf = SwitchName(LeafOf(e));
    if (IsStorage(e)) {
      info.host = fmt::format("storage{:03d}", e - num_gpus());
      info.kind = EndpointKind::kStorage;
    } else {
      info.host = HostName(HostOf(e));
      info.gpu = e % kGpusPerHost;
    }
    topo.Add(std::move(info));
  }
  return topo;
}

}  // namespace prism::sim
