#include "sim/record_emitter.h"

#include <algorithm>

namespace prism::sim {
namespace {

constexpr uint64_t kRoceMtuBytes = 4096;
constexpr uint16_t kRoceV2Port = 4791;

}  // namespace

RecordEmitter::RecordEmitter(const Cluster* cluster, const Network* network,
                             const NoiseConfig& noise, uint64_t seed, int64_t window_start_ns,
                             int64_t window_end_ns, FlowSink* out, PointTable* points)
    : cluster_(cluster),
      network_(network),
      noise_(noise),
      rng_(seed ^ 0x5EEDC0FFEEull),
      window_start_ns_(window_start_ns),
      window_end_ns_(window_end_ns),
      out_(out) {
  std::normal_distribution<double> skew(0, noise.clock_skew_us * 1e3);
  for (int s = 0; s < cluster->num_switches(); ++s) {
    point_of_switch_.push_back(points->Intern(cluster->SwitchName(s)));
    skew_ns_.push_back(noise.clock_skew_us > 0 ? static_cast<int64_t>(skew(rng_)) : 0);
  }
}

void RecordEmitter::Emit(const SimFlow& flow) {
  if (flow.end_ns < window_start_ns_ || flow.start_ns >= window_end_ns_) return;
  if (flow.job >= 0 && flow.kind != FlowKind::kControl) {
    for (size_t i = 0; i < watched_.size(); ++i)
      if (network_->Touches(flow.src, flow.dst, flow.route, flow.start_ns, flow.end_ns,
                            watched_[i]))
        touched_[i].insert(flow.job);
  }
  const int64_t timeout_ns = static_cast<int64_t>(noise_.active_timeout_ms * 1e6);
  const int64_t dur = flow.end_ns - flow.start_ns;
  if (timeout_ns <= 0 || dur <= timeout_ns) {
    Write(flow, flow.start_ns, flow.end_ns, flow.bytes);
    return;
  }
  // The exporter closes a long-lived flow every active timeout: pieces carry bytes pro rata.
  const int64_t pieces = (dur + timeout_ns - 1) / timeout_ns;
  uint64_t written = 0;
  for (int64_t i = 0; i < pieces; ++i) {
    int64_t s = flow.start_ns + i * timeout_ns;
    int64_t e = std::min(flow.end_ns, s + timeout_ns);
    uint64_t b = i + 1 == pieces ? flow.bytes - written
                                 : static_cast<uint64_t>(double(flow.bytes) * (e - s) / dur);
    written += b;
    Write(flow, s, e, b);
  }
}

void RecordEmitter::Write(const SimFlow& flow, int64_t start_ns, int64_t end_ns, uint64_t bytes) {
  if (noise_.loss > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < noise_.loss) {
    ++lost_;
    return;
  }
  const int sw = flow.route.spine >= 0 ? flow.route.spine : flow.route.src_leaf;
  FlowRecord r;
  r.start_ns = start_ns + skew_ns_[sw];
  r.end_ns = end_ns + skew_ns_[sw];
  r.src = cluster_->Ip(flow.src);
  r.dst = cluster_->Ip(flow.dst);
  r.src_port = static_cast<uint16_t>(49152 + flow.qp % 16384);  // per-QP source port (ECMP entropy)
  r.dst_port = kRoceV2Port;
  r.proto = 17;
  r.qp = flow.qp;
  r.bytes = bytes;
  r.packets = std::max<uint64_t>(1, (bytes + kRoceMtuBytes - 1) / kRoceMtuBytes);
  r.point = point_of_switch_[sw];
  out_->OnRecord(r);
  ++records_;
  if (flow.job >= 0 && flow.kind != FlowKind::kControl && flow.kind != FlowKind::kStorage) {
    uint64_t lo = std::min(flow.src, flow.dst), hi = std::max(flow.src, flow.dst);
    pairs_.emplace((lo << 32) | hi, flow.kind == FlowKind::kDp);
  }
}

}  // namespace prism::sim
