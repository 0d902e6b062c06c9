#include "sim/job_runner.h"

#include <algorithm>
#include <cmath>

#include "core/status.h"

namespace prism::sim {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kNvlinkBytesPerNs = 150.0;  // intra-host transfers: invisible to switches
constexpr uint64_t kCtsBytes = 64;           // NCCL clear-to-send entry, receiver -> sender

int64_t Ms(double ms) { return static_cast<int64_t>(ms * 1e6); }

}  // namespace

JobRunner::JobRunner(int index, const JobConfig& config, const Cluster* cluster,
                     Network* network, SimFlowSink* sink, std::vector<StragglerSpan> stragglers,
                     uint64_t seed, int64_t start_ns, double post_jitter_us)
    : index_(index),
      config_(config),
      cluster_(cluster),
      network_(network),
      sink_(sink),
      stragglers_(std::move(stragglers)),
      seed_(seed),
      rng_(seed * 0x9E3779B97F4A7C15ull + uint64_t(index) * 7919 + 1),
      first_gpu_(config.first_host * kGpusPerHost),
      post_jitter_ns_(post_jitter_us * 1e3) {
  // Jobs are mid-run and out of phase with each other.
  std::uniform_int_distribution<int64_t> phase(0, Ms(1000));
  stage_ready_.assign(size_t(config_.pp) * config_.dp, start_ns + phase(rng_));
  steps_.resize(num_ranks());
}

int64_t JobRunner::NextStepStart() const {
  return *std::min_element(stage_ready_.begin(), stage_ready_.end());
}

int64_t JobRunner::PostJitterNs() {
  if (post_jitter_ns_ <= 0) return 0;
  std::exponential_distribution<double> d(1.0 / post_jitter_ns_);
  return static_cast<int64_t>(d(rng_));
}

int64_t JobRunner::ComputeNs(double nominal_ms, int stage, int replica, int64_t t) {
  double factor = 1;
  for (const auto& s : stragglers_) {
    if (t < s.start_ns || t >= s.end_ns) continue;
    int tp_index = s.rank % config_.tp;
    if (s.rank == RankOf(stage, replica, tp_index)) factor = std::max(factor, s.factor);
  }
  std::normal_distribution<double> jitter(1.0, config_.compute_jitter);
  double j = std::clamp(jitter(rng_), 0.8, 1.2);
  return static_cast<int64_t>(nominal_ms * 1e6 * j * factor);
}

int64_t JobRunner::SendPp(int from_stage, int to_stage, int replica, int micro, int64_t t,
                          FlowKind kind) {
  const uint64_t bytes_per_rank =
      static_cast<uint64_t>(config_.activation_mib * kMiB / config_.tp);
  std::vector<TransferRequest> group;
  int64_t arrival = t;
  const int qps = std::max(1, config_.qps_per_connection);
  for (int tp_index = 0; tp_index < config_.tp; ++tp_index) {
    int src = Endpoint(RankOf(from_stage, replica, tp_index));
    int dst = Endpoint(RankOf(to_stage, replica, tp_index));
    if (cluster_->HostOf(src) == cluster_->HostOf(dst)) {
      arrival = std::max(arrival, t + static_cast<int64_t>(bytes_per_rank / kNvlinkBytesPerNs));
      continue;
    }
    int64_t start = t + PostJitterNs();
    // The receiver's clear-to-send precedes the data, on the reverse connection.
    uint32_t cts_qp = QpNumber(dst, src, 0, seed_);
    SimFlow cts{dst, src, cts_qp, start - 2'000, start - 1'000, kCtsBytes,
                cluster_->RouteFor(dst, src, cts_qp), index_, FlowKind::kControl};
    sink_->Emit(cts);
    // NCCL round-robins whole messages over the connection's QPs: each carries an equal share.
    for (int q = 0; q < qps; ++q) {
      uint32_t qp = QpNumber(src, dst, int((micro_counter_ + q) % qps), seed_);
      group.push_back({src, dst, qp, start, bytes_per_rank / qps});
    }
  }
  ++micro_counter_;
  if (group.empty()) return arrival;
  auto placed = network_->Place(group);
  for (size_t i = 0; i < group.size(); ++i) {
    const auto& g = group[i];
    sink_->Emit({g.src, g.dst, g.qp, g.start_ns, placed[i].end_ns, g.bytes, placed[i].route, index_,
                 kind});
    arrival = std::max(arrival, placed[i].end_ns);
  }
  (void)micro;
  return arrival;
}

int64_t JobRunner::RingCollective(int stage, int tp_index, const std::vector<int64_t>& ready,
                                  const std::vector<double>& bucket_bytes, double edge_factor,
                                  bool cts_at_ready) {
  const int dp = config_.dp;
  int64_t t = *std::max_element(ready.begin(), ready.end());
  if (dp < 2) return t;
  std::vector<int> member(dp);
  for (int d = 0; d < dp; ++d) member[d] = Endpoint(RankOf(stage, d, tp_index));
  // Ring edges d -> d+1; a ring of two is one edge each way.
  std::vector<std::pair<int, int>> edges;
  for (int d = 0; d < dp; ++d) edges.push_back({d, (d + 1) % dp});

  const int channels = std::max(1, config_.channels);
  // Ring steps per collective: 2(n-1) for an all-reduce, n-1 for a reduce-scatter or all-gather.
  const int ring_steps = std::max(1, static_cast<int>(std::lround(edge_factor * dp)));
  for (size_t b = 0; b < bucket_bytes.size(); ++b) {
    const uint64_t per_edge = static_cast<uint64_t>(bucket_bytes[b] * edge_factor);
    const uint64_t per_flow = per_edge / channels;
    std::vector<int> early(dp, 0);
    if (b == 0 && cts_at_ready && config_.ring_early_steps)
      early = SendEarlySteps(member, ready, per_edge, ring_steps);
    std::vector<TransferRequest> group;
    int64_t end = t;
    for (auto [from, to] : edges) {
      int src = member[from], dst = member[to];
      if (cluster_->HostOf(src) == cluster_->HostOf(dst)) {
        end = std::max(end, t + static_cast<int64_t>(per_edge / kNvlinkBytesPerNs));
        continue;
      }
      const uint64_t early_bytes = per_edge / ring_steps / channels * early[from];
      for (int c = 0; c < channels; ++c) {
        uint32_t qp = QpNumber(src, dst, c, seed_);
        // The receiver posts its buffers (clear-to-send) when it arrives at the collective, so
        // these control writes show who came last.
        int64_t cts_time = (b == 0 && cts_at_ready) ? ready[to] : t;
        cts_time += PostJitterNs();
        uint32_t cts_qp = QpNumber(dst, src, c, seed_);
        sink_->Emit({dst, src, cts_qp, cts_time, cts_time + 1'000, kCtsBytes,
                     cluster_->RouteFor(dst, src, cts_qp), index_, FlowKind::kControl});
        group.push_back({src, dst, qp, std::max(t, cts_time + 1'000) + PostJitterNs(),
                         per_flow - early_bytes});
      }
    }
    if (!group.empty()) {
      auto placed = network_->Place(group);
      for (size_t i = 0; i < group.size(); ++i) {
        const auto& g = group[i];
        sink_->Emit({g.src, g.dst, g.qp, g.start_ns, placed[i].end_ns, g.bytes, placed[i].route,
                     index_, FlowKind::kDp});
        end = std::max(end, placed[i].end_ns);
      }
    }
    t = end;  // the next bucket's ring starts when this one has finished everywhere
  }
  return t;
}

// NCCL's ring moves data chunk by chunk: step s of member d sends to its successor what d
// received at step s-1 (its own chunk at step 0). It can start once d is there, the successor has
// posted its buffers (on arrival) and the predecessor's step s-1 has arrived; before the last
// member arrives the chain runs from each early member on until it reaches one not there yet. So
// the member after the last one sends one step early, the next two, and so on, while the last
// member's predecessor waits for its buffers: the last member neither sends nor receives early.
std::vector<int> JobRunner::SendEarlySteps(const std::vector<int>& member,
                                           const std::vector<int64_t>& ready, uint64_t per_edge,
                                           int steps) {
  const int n = static_cast<int>(member.size());
  const int64_t last = *std::max_element(ready.begin(), ready.end());
  const int channels = std::max(1, config_.channels);
  const uint64_t per_flow = per_edge / steps / channels;
  std::vector<int> sent(n, 0);
  std::vector<int64_t> arrived(n, 0);  // when member d's latest step reached its successor
  for (int d = 0; d < n; ++d)
    if (cluster_->HostOf(member[d]) == cluster_->HostOf(member[(d + 1) % n])) return sent;
  for (int s = 0; s < steps; ++s) {
    std::vector<TransferRequest> group;
    std::vector<int> sender;
    for (int d = 0; d < n; ++d) {
      const int pred = (d + n - 1) % n, succ = (d + 1) % n;
      if (sent[d] != s || (s > 0 && sent[pred] < s)) continue;  // chain stopped, nothing to pass
      int64_t start = std::max(ready[d], ready[succ]);
      if (s > 0) start = std::max({start, arrived[d], arrived[pred]});
      if (start >= last) continue;
      for (int c = 0; c < channels; ++c) {
        group.push_back({member[d], member[succ], QpNumber(member[d], member[succ], c, seed_),
                         start + PostJitterNs(), per_flow});
        sender.push_back(d);
      }
    }
    if (group.empty()) break;
    const std::vector<TransferResult> placed = network_->Place(group);
    std::vector<int64_t> next = arrived;
    for (size_t i = 0; i < group.size(); ++i) {
      const TransferRequest& g = group[i];
      sink_->Emit({g.src, g.dst, g.qp, g.start_ns, placed[i].end_ns, g.bytes, placed[i].route,
                   index_, FlowKind::kDp});
      next[sender[i]] = std::max(next[sender[i]], placed[i].end_ns);
      sent[sender[i]] = s + 1;
    }
    arrived = std::move(next);
  }
  return sent;
}

void JobRunner::RunReplicaPipeline(int replica, std::vector<int64_t>* last_bwd_start,
                                   std::vector<int64_t>* last_bwd_end) {
  const int pp = config_.pp, dp = config_.dp, mb = config_.microbatches;
  struct Op {
    bool forward;
    int micro;
  };
  std::vector<std::vector<Op>> ops(pp);
  for (int s = 0; s < pp; ++s) {
    if (config_.schedule == Schedule::kGPipe) {
      for (int m = 0; m < mb; ++m) ops[s].push_back({true, m});
      for (int m = 0; m < mb; ++m) ops[s].push_back({false, m});
    } else {
      int warmup = std::min(pp - s - 1, mb);
      for (int m = 0; m < warmup; ++m) ops[s].push_back({true, m});
      for (int i = 0; i < mb - warmup; ++i) {
        ops[s].push_back({true, warmup + i});
        ops[s].push_back({false, i});
      }
      for (int m = mb - warmup; m < mb; ++m) ops[s].push_back({false, m});
    }
  }
  constexpr int64_t kUnknown = -1;
  std::vector<std::vector<int64_t>> act(pp, std::vector<int64_t>(mb, kUnknown));
  std::vector<std::vector<int64_t>> grad(pp, std::vector<int64_t>(mb, kUnknown));
  std::vector<std::vector<int64_t>> fwd_done(pp, std::vector<int64_t>(mb, kUnknown));
  std::vector<int64_t> free_at(pp);
  std::vector<size_t> next(pp, 0);
  for (int s = 0; s < pp; ++s) free_at[s] = stage_ready_[size_t(s) * dp + replica];

  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < pp; ++s) {
      while (next[s] < ops[s].size()) {
        const Op op = ops[s][next[s]];
        int64_t dep;
        if (op.forward) {
          dep = s == 0 ? free_at[s] : act[s][op.micro];
        } else {
          dep = s == pp - 1 ? fwd_done[s][op.micro] : grad[s][op.micro];
        }
        if (dep == kUnknown) break;
        int64_t start = std::max(free_at[s], dep);
        int64_t end = start + ComputeNs(op.forward ? config_.fwd_ms : 2 * config_.fwd_ms, s,
                                        replica, start);
        free_at[s] = end;
        if (op.forward) {
          fwd_done[s][op.micro] = end;
          if (s + 1 < pp) act[s + 1][op.micro] = SendPp(s, s + 1, replica, op.micro, end,
                                                        FlowKind::kPpForward);
        } else {
          if (s > 0) grad[s - 1][op.micro] = SendPp(s, s - 1, replica, op.micro, end,
                                                    FlowKind::kPpBackward);
          if (next[s] + 1 == ops[s].size()) {
            (*last_bwd_start)[size_t(s) * dp + replica] = start;
            (*last_bwd_end)[size_t(s) * dp + replica] = end;
          }
        }
        ++next[s];
        progress = true;
      }
    }
  }
  for (int s = 0; s < pp; ++s) PRISM_CHECK(next[s] == ops[s].size());
}

void JobRunner::RunStep() {
  const int pp = config_.pp, dp = config_.dp, tp = config_.tp;
  std::vector<int64_t> bwd_start(size_t(pp) * dp), bwd_end(size_t(pp) * dp);
  for (int d = 0; d < dp; ++d) RunReplicaPipeline(d, &bwd_start, &bwd_end);

  const double grad_bytes = config_.grad_mib * kMiB;
  std::vector<double> buckets;
  for (double f : config_.bucket_fractions) buckets.push_back(f * grad_bytes);
  const double n = dp;

  for (int s = 0; s < pp; ++s) {
    std::vector<int64_t> ready(dp);
    for (int d = 0; d < dp; ++d) ready[d] = bwd_end[size_t(s) * dp + d];
    int64_t dp_end = 0;
    std::vector<int64_t> opt_end(dp), next_ready(dp);
    // Bucket b of a collective overlapped with the last backward: reduced once every replica
    // has produced it (the backward runs through the buckets in order), each after the last.
    auto during_backward = [&](double edge_factor) {
      int64_t t = 0;
      for (size_t b = 0; b < buckets.size(); ++b) {
        std::vector<int64_t> bucket_ready(dp);
        for (int d = 0; d < dp; ++d) {
          size_t k = size_t(s) * dp + d;
          bucket_ready[d] = std::max(t, bwd_start[k] + (bwd_end[k] - bwd_start[k]) *
                                                           int64_t(b + 1) / int64_t(buckets.size()));
        }
        int64_t end = t;
        for (int i = 0; i < tp; ++i)
          end = std::max(end, RingCollective(s, i, bucket_ready, {buckets[b]}, edge_factor,
                                             b == 0));
        t = end;
      }
      return t;
    };
    if (!config_.zero) {
      // Ring all-reduce: each rank sends 2(n-1)/n of every bucket to its successor, after the
      // backward or (DDP's overlap) bucket by bucket during it.
      if (config_.overlap_grad_reduce) {
        dp_end = during_backward(2 * (n - 1) / n);
      } else {
        for (int i = 0; i < tp; ++i)
          dp_end = std::max(dp_end, RingCollective(s, i, ready, buckets, 2 * (n - 1) / n, true));
      }
      for (int d = 0; d < dp; ++d) {
        const int64_t from = std::max(dp_end, ready[d]);
        opt_end[d] = from + ComputeNs(config_.optimizer_ms, s, d, from);
        next_ready[d] = opt_end[d];
      }
    } else {
      // Reduce-scatter bucket b once every replica has produced it during its last backward.
      dp_end = during_backward((n - 1) / n);
      int64_t all_opt = 0;
      for (int d = 0; d < dp; ++d) {
        opt_end[d] = std::max(dp_end, ready[d]) + ComputeNs(config_.optimizer_ms, s, d, dp_end);
        all_opt = std::max(all_opt, opt_end[d]);
      }
      // Parameter all-gather, overlapped with the next forward: it may start once the first
      // bucket is gathered.
      int64_t first_bucket_end = 0;
      int64_t tg = all_opt;
      for (size_t b = 0; b < buckets.size(); ++b) {
        int64_t end = tg;
        std::vector<int64_t> r(dp, tg);
        for (int i = 0; i < tp; ++i)
          end = std::max(end, RingCollective(s, i, r, {buckets[b]}, (n - 1) / n, false));
        if (b == 0) first_bucket_end = end;
        tg = end;
      }
      for (int d = 0; d < dp; ++d) next_ready[d] = std::max(opt_end[d], first_bucket_end);
    }
    for (int d = 0; d < dp; ++d) {
      const size_t step_index = steps_[RankOf(s, d, 0)].size();
      if (config_.checkpoint_every_steps > 0 &&
          (step_index + 1) % static_cast<size_t>(config_.checkpoint_every_steps) == 0)
        next_ready[d] += static_cast<int64_t>(config_.checkpoint_pause_s * 1e9);
      for (const auto& [a, b] : stalls_)
        if (next_ready[d] >= a && next_ready[d] < b) next_ready[d] = b;
      stage_ready_[size_t(s) * dp + d] = next_ready[d];
      for (int i = 0; i < tp; ++i)
        steps_[RankOf(s, d, i)].push_back({opt_end[d], ready[d], dp_end});
    }
  }
}

}  // namespace prism::sim
