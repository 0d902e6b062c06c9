// File: sim/sim_config.h
// Everything that defines a simulated cluster run: fabric, jobs, faults and the realism knobs.
// Named scenarios (sim/scenarios.h) fill these in; `simulate --config` may later read them from a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace prism::sim {

enum class Schedule { k1F1B, kGPipe };

struct FabricConfig {
  int hosts = 8;                  // 8 GPUs and 8 NICs per host, NIC i on rail i
  int hosts_per_pod = 16;         // a pod has one leaf per rail
  int spines = 4;                 // every leaf connects to every spine (2-tier Clos, ECMP)
  int storage_nodes = 0;          // non-GPU endpoints on their own leaf
  double nic_gbps = 200;          // per GPU NIC
  double fabric_link_gbps = 400;  // leaf <-> spine
};

struct JobConfig {
  int first_host = 0;             // the job occupies consecutive hosts
  int dp = 2, pp = 2, tp = 8;     // TP stays inside a host; rank order tp-dp-pp (Megatron)
  int microbatches = 8;
  Schedule schedule = Schedule::k1F1B;
  bool zero = false;              // ZeRO/distributed optimizer: bucketed reduce-scatter overlapped with
                                  // the last backward, parameter all-gather overlapped with forward
  bool overlap_grad_reduce = false;  // DDP: each bucket all-reduced during the backward pass as
                                     // soon as it is ready (ignored with zero)
  double fwd_ms = 20;             // forward compute per micro-batch per stage; backward = 2x
  double compute_jitter = 0.01;   // relative sigma of every compute op
  double optimizer_ms = 30;
  // A synchronous checkpoint (or evaluation) every N steps: every stage pauses `checkpoint_pause_s`
  // after that step's optimizer, with no training traffic (0 = none). Part of the job's rhythm,
  // not a fault: the truth's step times include it.
  int checkpoint_every_steps = 0;
  double checkpoint_pause_s = 0;
  double activation_mib = 64;     // PP activation per micro-batch per stage boundary (split over TP)
  double grad_mib = 1024;         // gradient bytes per rank (all-reduced over DP every step)
  std::vector<double> bucket_fractions = {0.35, 0.3, 0.25, 0.1};  // DP buckets (ZeRO: uniform)
  int channels = 2;               // NCCL channels: parallel ring flows per DP edge
  // NCCL rings make progress before the last member arrives: a member whose successor has posted
  // its buffers sends its own chunk, and passes on what its predecessor sent it, until the chain
  // reaches a member not there yet (JobRunner::SendEarlySteps). Off: every ring edge starts when
  // the last member is ready (the model the flow-mode evaluation tables were measured with).
  bool ring_early_steps = false;
  int qps_per_connection = 2;     // PP messages round-robin over these QPs
};

enum class FaultKind { kStraggler, kDegradedSwitch, kCongestedLink, kStall, kDegradedLink };

struct FaultConfig {
  FaultKind kind = FaultKind::kStraggler;
  int job = 0, rank = 0;          // straggler: the slow rank of that job; stall: the job that
                                  // pauses (no step starts in [start_s, end_s)); degraded link:
                                  // the rank whose NIC link to its leaf loses capacity
  std::string switch_a, switch_b; // degraded: switch_a; congested link: switch_a (leaf) -> switch_b
                                  // (spine; "auto": the spine a pipeline connection from the leaf uses)
  double factor = 1.5;            // compute x factor, or bandwidth / factor
  double start_s = 0, end_s = 0;  // relative to the window start
};

struct NoiseConfig {
  double loss = 0;                // probability a record is lost
  double clock_skew_us = 0;       // sigma of a per-switch clock offset
  double active_timeout_ms = 0;   // exporter active timeout: longer flows split; 0 = off
  double checkpoint_period_s = 0; // storage traffic: every GPU of a job writes a checkpoint; 0 = off
  double checkpoint_mib = 256;
  double dataload_period_s = 0;   // storage reads (data loading) per host; 0 = off
  double post_jitter_us = 5;      // CPU proxy posting jitter per message
};

struct SimConfig {
  std::string name = "custom";
  uint64_t seed = 1;
  double duration_s = 60;         // the observed window
  double warmup_s = 5;            // simulated before the window so jobs are mid-run
  int64_t start_ns = 1'700'000'000'000'000'000;
  FabricConfig fabric;
  std::vector<JobConfig> jobs;
  std::vector<FaultConfig> faults;
  NoiseConfig noise;
  bool write_csv = true;          // small scenarios also get flows.csv
};

}  // namespace prism::sim
