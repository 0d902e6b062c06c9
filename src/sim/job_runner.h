// File: sim/job_runner.h
// One training job on the simulated cluster, advanced a step at a time. A step is the pipeline
// schedule (1F1B or GPipe) of every data-parallel replica, with PP activation / gradient sends
// between stages, then the DP gradient collective per stage (ring all-reduce in buckets, or with
// ZeRO a reduce-scatter overlapped with the last backward and a parameter all-gather), then the
// optimizer. Transfers go through the Network (their durations) to a SimFlowSink; the runner keeps
// each rank's true step boundaries for the ground truth.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "sim/cluster.h"
#include "sim/network.h"
#include "sim/sim_config.h"
#include "sim/sim_flow.h"

namespace prism::sim {

struct StragglerSpan {
  int rank = 0;
  double factor = 1;
  int64_t start_ns = 0, end_ns = 0;
};

struct RankStep {
  int64_t end_ns = 0;       // optimizer end: the step boundary
  int64_t dp_start_ns = 0;  // the rank's DP collective phase
  int64_t dp_end_ns = 0;
};

class JobRunner {
 public:
  JobRunner(int index, const JobConfig& config, const Cluster* cluster, Network* network,
            SimFlowSink* sink, std::vector<StragglerSpan> stragglers, uint64_t seed,
            int64_t start_ns, double post_jitter_us);

  int64_t NextStepStart() const;
  void RunStep();
  // A job-wide pause: a stage that would start its next step in [start_ns, end_ns) waits until
  // end_ns (a hung collective, a checkpoint written synchronously, a restart).
  void AddStall(int64_t start_ns, int64_t end_ns) { stalls_.push_back({start_ns, end_ns}); }

  const JobConfig& config() const { return config_; }
  int num_ranks() const { return config_.dp * config_.pp * config_.tp; }
  // Endpoint of a Megatron rank: rank = tp_i + tp * (dp_i + dp * pp_i), packed onto hosts.
  int Endpoint(int rank) const { return first_gpu_ + rank; }
  int RankOf(int stage, int replica, int tp_index) const {
    return tp_index + config_.tp * (replica + config_.dp * stage);
  }
  int StageOfRank(int rank) const { return rank / (config_.tp * config_.dp); }
  const std::vector<RankStep>& Steps(int rank) const { return steps_[rank]; }

 private:
  // Time a compute op of `dur_ns` nominal takes on (stage, replica) starting at `t`.
  int64_t ComputeNs(double nominal_ms, int stage, int replica, int64_t t);
  // Sends `bytes` from every TP rank of (from_stage, replica) to the same TP rank of to_stage;
  // returns when the last byte arrives.
  int64_t SendPp(int from_stage, int to_stage, int replica, int micro, int64_t t, FlowKind kind);
  // One DP collective over the ring of (stage, tp_index) across replicas, all members ready at
  // `ready[replica]`: the buckets in order; returns the end of the last bucket.
  int64_t RingCollective(int stage, int tp_index, const std::vector<int64_t>& ready,
                         const std::vector<double>& bucket_bytes, double edge_factor,
                         bool cts_at_ready);
  void RunReplicaPipeline(int replica, std::vector<int64_t>* last_bwd_start,
                          std::vector<int64_t>* last_bwd_end);
  int64_t PostJitterNs();
  // The ring steps members send before the last one arrives (bucket 0 with buffers posted at
  // arrival), emitted as flows; returns the steps each member (replica) sent.
  std::vector<int> SendEarlySteps(const std::vector<int>& member, const std::vector<int64_t>& ready,
                                  uint64_t per_edge, int steps);

  int index_;
  JobConfig config_;
  const Cluster* cluster_;
  Network* network_;
  SimFlowSink* sink_;
  std::vector<StragglerSpan> stragglers_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  int first_gpu_;
  std::vector<int64_t> stage_ready_;       // per stage*dp + replica: when the next step may start
  std::vector<std::vector<RankStep>> steps_;
  std::vector<std::pair<int64_t, int64_t>> stalls_;
  uint64_t micro_counter_ = 0;            // round-robin over QPs
  double post_jitter_ns_ = 0;
};

}  // namespace prism::sim
