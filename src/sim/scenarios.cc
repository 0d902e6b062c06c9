#include "sim/scenarios.h"

#include <algorithm>

namespace prism::sim {
namespace {

JobConfig Job(int first_host, int dp, int pp, int tp, int microbatches, double fwd_ms) {
  JobConfig j;
  j.first_host = first_host;
  j.dp = dp;
  j.pp = pp;
  j.tp = tp;
  j.microbatches = microbatches;
  j.fwd_ms = fwd_ms;
  return j;
}

SimConfig Tiny() {
  SimConfig c;
  c.name = "tiny";
  c.fabric.hosts = 8;
  c.fabric.hosts_per_pod = 4;
  c.fabric.spines = 2;
  c.duration_s = 30;
  JobConfig j = Job(0, 4, 2, 8, 8, 40);
  c.jobs.push_back(j);
  return c;
}

// Small enough to emit as packets (`simulate --emit pcap`, ~10^5 RoCE packets): 32 GPUs, one
// 2x2x8 job with small tensors, 3 s.
SimConfig PcapTiny() {
  SimConfig c;
  c.name = "pcap-tiny";
  c.fabric.hosts = 4;
  c.fabric.hosts_per_pod = 2;
  c.fabric.spines = 2;
  c.duration_s = 3;
  c.warmup_s = 1;
  JobConfig j = Job(0, 2, 2, 8, 4, 6);
  j.grad_mib = 1;
  j.activation_mib = 2;
  j.optimizer_ms = 8;
  c.jobs.push_back(j);
  return c;
}

// For exporters whose flow cache expires idle flows after whole seconds (softflowd, pmacct nfprobe;
// tests/service/serve_softflowd.sh): 64 GPUs, one 4x2x8 job with one micro-batch whose forward op
// takes 0.8 s (backward 1.6 s), so each QP carries one message per phase and then sits idle for
// >= 2.4 s: with a 1 s idle timeout every message (DP: every step's all-reduce) becomes its own
// flow record. Steps take ~5.1 s. A straggler GPU (stage 1, replica 1, TP rank 3: 1.5x compute)
// from 18 s on stretches the steps to ~6.3 s. Small tensors (1 MiB) keep a real-time replay
// light (~190k packets, 0.8 GB on the wire in 38 s).
SimConfig SlowSteps() {
  SimConfig c;
  c.name = "slow-steps";
  c.fabric.hosts = 8;
  c.fabric.hosts_per_pod = 4;
  c.fabric.spines = 2;
  c.duration_s = 38;
  c.warmup_s = 2;
  JobConfig j = Job(0, 4, 2, 8, 1, 800);
  j.grad_mib = 1;
  j.activation_mib = 1;
  j.optimizer_ms = 300;
  j.channels = 1;
  c.jobs.push_back(j);
  FaultConfig straggler;
  straggler.kind = FaultKind::kStraggler;
  straggler.job = 0;
  straggler.rank = 1 * 32 + 1 * 8 + 3;  // rank order tp-dp-pp: stage 1, replica 1, TP rank 3
  straggler.factor = 1.5;
  straggler.start_s = 18;
  straggler.end_s = 38;
  c.faults.push_back(straggler);
  return c;
}

// The paper's evaluation platform: 2,880 GPUs, five jobs of up to 1,024 GPUs, different layouts.
SimConfig Paper() {
  SimConfig c;
  c.name = "paper";
  c.fabric.hosts = 360;
  c.fabric.hosts_per_pod = 16;
  c.fabric.spines = 8;
  c.write_csv = false;
  c.jobs.push_back(Job(0, 16, 8, 8, 8, 30));     // 1024 GPUs, 1F1B
  JobConfig gpipe = Job(128, 16, 4, 8, 8, 25);   // 512 GPUs, GPipe
  gpipe.schedule = Schedule::kGPipe;
  c.jobs.push_back(gpipe);
  JobConfig j2 = Job(192, 32, 4, 4, 16, 12);     // 512 GPUs, TP 4: half the DP ring is NVLink
  j2.grad_mib = 768;
  c.jobs.push_back(j2);
  JobConfig j3 = Job(256, 32, 2, 8, 4, 60);      // 512 GPUs, shallow pipeline
  j3.qps_per_connection = 1;
  c.jobs.push_back(j3);
  JobConfig j4 = Job(320, 8, 8, 4, 12, 15);      // 256 GPUs
  j4.channels = 4;
  c.jobs.push_back(j4);
  return c;
}

SimConfig Faults() {
  SimConfig c = Paper();
  c.name = "faults";
  FaultConfig straggler;
  straggler.kind = FaultKind::kStraggler;
  straggler.job = 2;
  straggler.rank = 4 * 32 * 1 + 4 * 5 + 1;  // stage 1, replica 5, TP rank 1
  straggler.factor = 1.3;
  straggler.start_s = 15;
  straggler.end_s = 45;
  c.faults.push_back(straggler);
  FaultConfig sw;
  sw.kind = FaultKind::kDegradedSwitch;
  sw.switch_a = "spine03";
  sw.factor = 4;
  sw.start_s = 20;
  sw.end_s = 50;
  c.faults.push_back(sw);
  FaultConfig link;
  link.kind = FaultKind::kCongestedLink;
  link.switch_a = "leaf-p000-r2";
  link.switch_b = "auto";  // the spine job0's first pipeline connection from this leaf uses
  link.factor = 10;  // PP sends are NIC-bound: /10 of the link costs them ~60% (docs/diagnosis.md)
  link.start_s = 30;
  link.end_s = 55;
  c.faults.push_back(link);
  return c;
}

// Degraded NIC links (a link that trained down to a fraction of its speed, a dirty optic): one
// GPU's link to its leaf at 1/10 of its capacity in job3 (20-50 s), one at 1/4 in job0 (10-35 s).
SimConfig LinkFaults() {
  SimConfig c = Paper();
  c.name = "link-faults";
  FaultConfig strong;
  strong.kind = FaultKind::kDegradedLink;
  strong.job = 3;
  strong.rank = 1 * 32 * 8 + 7 * 8 + 2;  // rank order tp-dp-pp: stage 1, replica 7, TP rank 2
  strong.factor = 10;
  strong.start_s = 20;
  strong.end_s = 50;
  c.faults.push_back(strong);
  FaultConfig mild;
  mild.kind = FaultKind::kDegradedLink;
  mild.job = 0;
  mild.rank = 3 * 16 * 8 + 9 * 8 + 5;  // stage 3, replica 9, TP rank 5
  mild.factor = 4;
  mild.start_s = 10;
  mild.end_s = 35;
  c.faults.push_back(mild);
  return c;
}

SimConfig Zero() {
  SimConfig c = Paper();
  c.name = "zero";
  for (auto& j : c.jobs) {
    j.zero = true;
    j.bucket_fractions.assign(8, 1.0 / 8);  // Megatron buckets: uniform size
  }
  return c;
}

// DP collectives whose transfers show one size per step, the case the distinct-size rule reads
// as pipeline traffic: a 2-way ring (each pair sends both ways at once, like a pipeline pair) with
// the whole gradient in one bucket on one channel; and DDP-style equal buckets all-reduced during
// the backward pass, interleaved with the pipeline's backward sends.
SimConfig UniformDp() {
  SimConfig c;
  c.name = "uniform-dp";
  c.fabric.hosts = 16;
  c.fabric.hosts_per_pod = 4;
  c.fabric.spines = 2;
  c.duration_s = 30;
  JobConfig one_bucket = Job(0, 2, 4, 8, 8, 30);  // 2 x 4 x 8: 8 hosts
  one_bucket.bucket_fractions = {1.0};
  one_bucket.channels = 1;
  one_bucket.qps_per_connection = 1;
  c.jobs.push_back(one_bucket);
  JobConfig ddp = Job(8, 4, 1, 8, 4, 40);  // 4 x 1 x 8, DP only: 4 hosts
  ddp.bucket_fractions.assign(4, 0.25);
  ddp.overlap_grad_reduce = true;
  c.jobs.push_back(ddp);
  JobConfig ddp_pp = Job(12, 2, 2, 8, 4, 25);  // 2 x 2 x 8: 4 hosts
  ddp_pp.bucket_fractions.assign(6, 1.0 / 6);
  ddp_pp.overlap_grad_reduce = true;
  c.jobs.push_back(ddp_pp);
  return c;
}

// Sharding by job (tests/scaleout/shards.sh): uniform-dp's three jobs with a straggler GPU in
// job1 (a finding about one job) and a degraded spine (one about the fabric, which every job's
// traffic crosses) from 10 s, and storage traffic (endpoints of no job).
SimConfig Shards() {
  SimConfig c = UniformDp();
  c.name = "shards";
  c.fabric.storage_nodes = 2;
  c.noise.dataload_period_s = 2;
  FaultConfig straggler;
  straggler.kind = FaultKind::kStraggler;
  straggler.job = 1;
  straggler.rank = 1 * 8 + 3;  // rank order tp-dp-pp: replica 1, TP rank 3
  straggler.factor = 1.5;
  straggler.start_s = 10;
  straggler.end_s = 30;
  c.faults.push_back(straggler);
  FaultConfig sw;
  sw.kind = FaultKind::kDegradedSwitch;
  sw.switch_a = "spine01";
  sw.factor = 4;
  sw.start_s = 10;
  sw.end_s = 30;
  c.faults.push_back(sw);
  return c;
}

SimConfig Noisy() {
  SimConfig c = Paper();
  c.name = "noisy";
  c.fabric.storage_nodes = 8;
  c.noise.loss = 0.01;
  c.noise.clock_skew_us = 50;
  c.noise.active_timeout_ms = 20;
  c.noise.checkpoint_period_s = 30;
  c.noise.dataload_period_s = 2;
  return c;
}

// One minute of n_jobs jobs of 1,024 GPUs (16 x 8 x 8) with long steps, as on a large platform.
SimConfig Scale(const char* name, int n_jobs, int spines) {
  SimConfig c;
  c.name = name;
  c.fabric.hosts = n_jobs * 128;
  c.fabric.hosts_per_pod = 32;
  c.fabric.spines = spines;
  c.write_csv = false;
  for (int i = 0; i < n_jobs; ++i) {
    JobConfig j = Job(i * 128, 16, 8, 8, 8, 100 + 10 * (i % 5));
    j.qps_per_connection = 1;
    j.grad_mib = 2048;
    c.jobs.push_back(j);
  }
  return c;
}

// Counters mode (docs/counters.md): three jobs with steps of 5-9 s on 20 hosts for ten minutes, a
// 40 s job-wide stall and a slow server (all 8 GPUs of one host 1.4x slower for two minutes).
// `scale` multiplies every compute time (so the step length) and the run's length: "counters-short"
// (0.3: 1.6-2.6 s steps) and "counters-long" (3: 16-26 s steps, 30 min) measure accuracy vs step length.
SimConfig Counters(const char* name = "counters", double scale = 1) {
  SimConfig c;
  c.name = name;
  c.fabric.hosts = 20;
  c.fabric.hosts_per_pod = 16;
  c.fabric.spines = 2;
  c.duration_s = 600;
  c.warmup_s = 20;
  c.write_csv = false;
  c.jobs.push_back(Job(0, 4, 2, 8, 16, 100));   // 8 hosts, ~5.5 s steps
  c.jobs.push_back(Job(8, 3, 2, 8, 24, 110));   // 6 hosts, ~8.5 s steps
  c.jobs.push_back(Job(14, 6, 1, 8, 8, 250));   // 6 hosts, DP only, ~6.3 s steps
  for (JobConfig& j : c.jobs) j.ring_early_steps = true;  // as NCCL rings do (sim_config.h)
  for (int g = 0; g < 8; ++g) {                 // host 1: stage 0, replica 1 of job 0
    FaultConfig f;
    f.kind = FaultKind::kStraggler;
    f.job = 0;
    f.rank = 8 + g;
    f.factor = 1.4;
    f.start_s = 300;
    f.end_s = 420;
    c.faults.push_back(f);
  }
  FaultConfig stall;
  stall.kind = FaultKind::kStall;
  stall.job = 1;
  stall.start_s = 200;
  stall.end_s = 240;
  c.faults.push_back(stall);
  if (scale != 1) {
    for (JobConfig& j : c.jobs) {
      j.fwd_ms *= scale;
      j.optimizer_ms *= scale;
    }
    const double time_scale = std::max(1.0, scale);
    c.duration_s *= time_scale;
    for (FaultConfig& f : c.faults) {
      f.start_s *= time_scale;
      f.end_s *= time_scale;
    }
  }
  return c;
}

// Counters mode as an operator runs it (docs/counters.md): steps of 2-5 s read through 1 s polls,
// one job checkpointing every 20 steps (a 6 s pause: its rhythm, not a fault), a job-wide stall,
// a slow server; 20 hosts, 15 minutes.
SimConfig CountersOps() {
  SimConfig c = Counters("counters-ops");
  c.duration_s = 900;
  c.jobs[0].fwd_ms = 85;        // 8 hosts, ~4.5 s steps; host 1 1.4x slower 300-420 s
  c.jobs[0].optimizer_ms = 20;
  c.jobs[1].fwd_ms = 35;        // 6 hosts, ~3 s steps; stalls 200-240 s
  c.jobs[1].optimizer_ms = 15;
  c.jobs[2].fwd_ms = 90;        // 6 hosts, DP only, ~2 s steps; a checkpoint every 20 steps
  c.jobs[2].optimizer_ms = 15;
  c.jobs[2].checkpoint_every_steps = 20;
  c.jobs[2].checkpoint_pause_s = 6;
  return c;
}

}  // namespace

std::vector<ScenarioInfo> ListScenarios() {
  return {
      {"tiny", "64 GPUs, one 4x2x8 job (DP x PP x TP), 8 micro-batches, 30 s"},
      {"pcap-tiny", "32 GPUs, one 2x2x8 job with small tensors, 3 s: for --emit pcap"},
      {"slow-steps", "64 GPUs, one 4x2x8 job with ~5 s steps (each QP idle for seconds between "
                     "messages) and a straggler GPU from 18 s, 38 s: for exporters with idle "
                     "timeouts of seconds (softflowd)"},
      {"paper", "2,880 GPUs, five jobs of 256-1,024 GPUs with different layouts and schedules, 60 s"},
      {"faults", "paper + a straggler GPU, a degraded spine and a congested leaf-spine link"},
      {"link-faults", "paper + two degraded NIC links: one GPU's link at 1/10 (job3), one at 1/4 "
                      "(job0)"},
      {"zero", "paper with ZeRO-style DP: uniform buckets overlapped with backward, param all-gather"},
      {"uniform-dp", "64+32+32 GPUs: DP collectives in one transfer size per step (2-way rings "
                     "with one bucket; DDP-style equal buckets overlapped with backward), 30 s"},
      {"shards", "uniform-dp + a straggler GPU in job1, a degraded spine and storage reads, 30 s"},
      {"noisy", "paper + storage/checkpoint traffic, 1% lost records, 50 us clock skew, 20 ms "
                "exporter active timeout"},
      {"scale-10k", "10,240 GPUs, ten 1,024-GPU jobs, one minute"},
      {"counters", "160 GPUs, three jobs with 5-9 s steps, a 40 s stall and a slow server, 10 min "
                   "(for --emit counters)"},
      {"counters-short", "counters with 0.3x compute: 1.6-2.6 s steps"},
      {"counters-long", "counters with 3x compute and length: 16-26 s steps, 30 min"},
      {"counters-ops", "counters with 2-5 s steps, a checkpoint every 20 steps on one job, a stall "
                       "and a slow server, 15 min (for --emit counters --poll 1)"},
      {"scale-100k", "102,400 GPUs, a hundred 1,024-GPU jobs, one minute"},
  };
}

StatusOr<SimConfig> MakeScenario(const std::string& name, uint64_t seed) {
  SimConfig c;
  if (name == "tiny") c = Tiny();
  else if (name == "pcap-tiny") c = PcapTiny();
  else if (name == "slow-steps") c = SlowSteps();
  else if (name == "paper") c = Paper();
  else if (name == "faults") c = Faults();
  else if (name == "zero") c = Zero();
  else if (name == "link-faults") c = LinkFaults();
  else if (name == "noisy") c = Noisy();
  else if (name == "uniform-dp") c = UniformDp();
  else if (name == "shards") c = Shards();
  else if (name == "counters") c = Counters();
  else if (name == "counters-short") c = Counters("counters-short", 0.3);
  else if (name == "counters-long") c = Counters("counters-long", 3);
  else if (name == "counters-ops") c = CountersOps();
  else if (name == "scale-10k") c = Scale("scale-10k", 10, 16);
  else if (name == "scale-100k") c = Scale("scale-100k", 100, 64);
  else return MakeError(ErrorCode::kInvalidArgument, "unknown scenario '{}' (see --list)", name);
  c.seed = seed;
  return c;
}

}  // namespace prism::sim
