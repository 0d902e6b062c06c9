// File: sim/network.h
// How long a transfer takes on the simulated fabric. A transfer's rate is the smallest share it
// gets on the links it crosses: its NIC (shared evenly with the other transfers of the same
// collective on that NIC), and the leaf<->spine links, where the load already placed by other
// transfers in the same time bin is subtracted (max-min fairness approximated per 5 ms bin).
// Faults scale a switch's or a link's capacity. Approximate by design: it makes shared links slow
// each other down and degraded switches show, at a cost that scales to 100k GPUs.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/cluster.h"
#include "sim/congestion_log.h"

namespace prism::sim {

struct TransferRequest {
  int src = 0, dst = 0;   // endpoints
  uint32_t qp = 0;
  int64_t start_ns = 0;
  uint64_t bytes = 0;
};

struct TransferResult {
  int64_t end_ns = 0;
  Route route;
};

// A capacity change on one switch (all its links), one leaf->spine link pair or one NIC's link to
// its leaf (both directions), for a time span.
struct CapacityFault {
  int switch_a = -1;   // the degraded switch, or the leaf of a congested link; -1 for a NIC link
  int switch_b = -1;   // the spine of a congested link; -1 otherwise
  double factor = 1;   // capacity / factor
  int64_t start_ns = 0, end_ns = 0;
  int endpoint = -1;   // the endpoint of a degraded NIC link; -1 otherwise
};

class Network {
 public:
  explicit Network(const Cluster* cluster) : cluster_(cluster) {}
  void AddFault(const CapacityFault& f) { faults_.push_back(f); }
  // Where the fabric squeezes transfers, whatever the faults (sim/congestion_log.h).
  void set_congestion_log(CongestionLog* log) { congestion_log_ = log; }

  // Places a group of transfers that start together (one collective's flows, or one PP send split
  // over QPs); returns their end times in order. Transfers of one group share NICs evenly.
  std::vector<TransferResult> Place(const std::vector<TransferRequest>& group);

  // True when a transfer between src and dst on the route crosses a fault's switch or link while
  // it is active.
  bool Touches(int src, int dst, const Route& r, int64_t start_ns, int64_t end_ns,
               const CapacityFault& f) const;

 private:
  static constexpr int64_t kBinNs = 5'000'000;
  struct Load {
    float bytes_per_ns = 0;
    uint16_t flows = 0;
  };
  uint64_t LinkKey(int leaf, int spine, bool up) const {
    return (uint64_t(leaf) << 21) | (uint64_t(spine) << 1) | (up ? 1 : 0);
  }
  double FaultFactor(int switch_a, int switch_b, int64_t t) const;
  double NicFaultFactor(int endpoint, int64_t t) const;
  double FabricShare(uint64_t link, int64_t t, double capacity) const;
  void AddLoad(uint64_t link, int64_t start_ns, int64_t end_ns, double rate);

  const Cluster* cluster_;
  CongestionLog* congestion_log_ = nullptr;
  std::vector<CapacityFault> faults_;
  std::unordered_map<uint64_t, Load> load_;  // key: link << 24 | bin
};

}  // namespace prism::sim
