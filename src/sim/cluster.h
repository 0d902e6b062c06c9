// File: sim/cluster.h
// The simulated fabric: hosts of 8 GPUs with one NIC each (rail-optimised: NIC i on the pod's leaf
// i), storage nodes on their own leaf, and a spine layer reached by ECMP on the destination QP.
// Endpoints are numbered GPUs first (host * 8 + local), then storage nodes.
#pragma once

#include <cstdint>
#include <string>

#include "core/ip_addr.h"
#include "core/topology.h"
#include "sim/sim_config.h"

namespace prism::sim {

inline constexpr int kGpusPerHost = 8;

// A route through the 2-tier Clos: the source leaf, the spine (-1 when both ends share the leaf)
// and the destination leaf. Switch ids: leaves 0..L-1, then spines L..L+S-1.
struct Route {
  int src_leaf = 0;
  int spine = -1;
  int dst_leaf = 0;
};

class Cluster {
 public:
  explicit Cluster(const FabricConfig& config);

  int num_gpus() const { return config_.hosts * kGpusPerHost; }
  int num_endpoints() const { return num_gpus() + config_.storage_nodes; }
  bool IsStorage(int endpoint) const { return endpoint >= num_gpus(); }
  int StorageEndpoint(int i) const { return num_gpus() + i; }
  int num_storage() const { return config_.storage_nodes; }

  IpAddr Ip(int endpoint) const;
  int HostOf(int endpoint) const { return endpoint / kGpusPerHost; }
  std::string HostName(int host) const;

  int num_leaves() const { return num_pods_ * kGpusPerHost + 1; }  // + the storage leaf
  int num_spines() const { return config_.spines; }
  int num_switches() const { return num_leaves() + num_spines(); }
  int LeafOf(int endpoint) const;
  int SpineSwitch(int spine) const { return num_leaves() + spine; }
  std::string SwitchName(int switch_id) const;
  // Returns -1 for an unknown name.
  int FindSwitch(const std::string& name) const;

  Route RouteFor(int src, int dst, uint32_t qp) const;

  double nic_bytes_per_ns() const { return config_.nic_gbps / 8.0; }
  double fabric_bytes_per_ns() const { return config_.fabric_link_gbps / 8.0; }

  Topology MakeTopology() const;

 private:
  FabricConfig config_;
  int num_pods_ = 1;
};

}  // namespace prism::sim
