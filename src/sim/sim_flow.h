// File: sim/sim_flow.h
// One transfer the simulator placed on the fabric, before it becomes a flow record (loss, clock
// skew and exporter timeouts are applied by the emitter, sim/record_emitter.h).
#pragma once

#include <cstdint>

#include "sim/cluster.h"

namespace prism::sim {

enum class FlowKind { kPpForward, kPpBackward, kDp, kControl, kStorage };

struct SimFlow {
  int src = 0, dst = 0;  // endpoints
  uint32_t qp = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint64_t bytes = 0;
  Route route;
  int job = -1;  // -1 for storage traffic
  FlowKind kind = FlowKind::kDp;
};

class SimFlowSink {
 public:
  virtual ~SimFlowSink() = default;
  virtual void Emit(const SimFlow& flow) = 0;
};

// Destination QP number of the k-th queue pair of the connection src -> dst: fixed per connection,
// 24 bits, never 0 or 1 (reserved in InfiniBand).
inline uint32_t QpNumber(int src, int dst, int k, uint64_t seed) {
  uint64_t h = (uint64_t(uint32_t(src)) << 32 | uint32_t(dst)) ^ (seed * 0xD6E8FEB86659FD93ull);
  h = (h ^ (h >> 32)) * 0xD6E8FEB86659FD93ull;
  h ^= h >> 29;
  h += uint64_t(k) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 32;
  return static_cast<uint32_t>(2 + h % 0xFFFFFDu);
}

}  // namespace prism::sim
