#include "sim/simulator.h"

#include <algorithm>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "sim/job_runner.h"
#include "sim/network.h"
#include "sim/record_emitter.h"

namespace prism::sim {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

int64_t SecondsToNs(double s) { return static_cast<int64_t>(s * 1e9); }

Status Validate(const SimConfig& config, const Cluster& cluster) {
  int used_until = 0;
  for (size_t i = 0; i < config.jobs.size(); ++i) {
    const JobConfig& j = config.jobs[i];
    if (j.tp < 1 || j.tp > kGpusPerHost || kGpusPerHost % j.tp != 0)
      return MakeError(ErrorCode::kInvalidArgument, "job {}: tp must divide {}", i, kGpusPerHost);
    if (j.dp < 1 || j.pp < 1 || j.microbatches < 1)
      return MakeError(ErrorCode::kInvalidArgument, "job {}: dp, pp, microbatches must be >= 1", i);
    int gpus = j.dp * j.pp * j.tp;
    if (gpus % kGpusPerHost != 0)
      return MakeError(ErrorCode::kInvalidArgument, "job {}: dp*pp*tp = {} is not whole hosts", i,
                       gpus);
    if (j.first_host < used_until)
      return MakeError(ErrorCode::kInvalidArgument, "job {} overlaps the previous job", i);
    used_until = j.first_host + gpus / kGpusPerHost;
    if (used_until > config.fabric.hosts)
      return MakeError(ErrorCode::kInvalidArgument, "job {} needs hosts up to {}, cluster has {}", i,
                       used_until, config.fabric.hosts);
    if (j.bucket_fractions.empty())
      return MakeError(ErrorCode::kInvalidArgument, "job {}: no DP buckets", i);
  }
  for (const auto& f : config.faults) {
    if (f.kind == FaultKind::kStraggler || f.kind == FaultKind::kStall ||
        f.kind == FaultKind::kDegradedLink) {
      if (f.job < 0 || f.job >= int(config.jobs.size()))
        return MakeError(ErrorCode::kInvalidArgument, "fault names job {}: no such job", f.job);
      const JobConfig& j = config.jobs[size_t(f.job)];
      if (f.kind == FaultKind::kDegradedLink && (f.rank < 0 || f.rank >= j.dp * j.pp * j.tp))
        return MakeError(ErrorCode::kInvalidArgument, "fault names rank {} of job {}: no such rank",
                         f.rank, f.job);
    } else if (cluster.FindSwitch(f.switch_a) < 0 ||
               (f.kind == FaultKind::kCongestedLink && cluster.FindSwitch(f.switch_b) < 0)) {
      return MakeError(ErrorCode::kInvalidArgument, "fault names unknown switch '{}' / '{}'",
                       f.switch_a, f.switch_b);
    }
  }
  return OkStatus();
}

// A congested link given as (leaf, "auto") takes the spine that the first pipeline connection
// leaving that leaf hashes to, so the fault lies on a path the jobs use whatever the seed.
void ResolveAutoLinks(SimConfig* config, const Cluster& cluster) {
  for (FaultConfig& f : config->faults) {
    if (f.kind != FaultKind::kCongestedLink || f.switch_b != "auto") continue;
    const int leaf = cluster.FindSwitch(f.switch_a);
    for (const JobConfig& j : config->jobs) {
      const int ranks = j.dp * j.pp * j.tp, stage = j.dp * j.tp;
      for (int r = 0; r + stage < ranks && f.switch_b == "auto"; ++r) {
        const int src = j.first_host * kGpusPerHost + r, dst = src + stage;
        const Route route = cluster.RouteFor(src, dst, QpNumber(src, dst, 0, config->seed));
        if (route.src_leaf == leaf && route.spine >= 0) f.switch_b = cluster.SwitchName(route.spine);
      }
    }
  }
}

std::string IpName(const Cluster& c, int endpoint) { return c.Ip(endpoint).ToString(); }

// Checkpoint writes (every GPU of a job to one storage node) and data-loading reads (storage to
// one GPU per host): bulk traffic that touches every job through a few storage endpoints.
void EmitStorageTraffic(const SimConfig& config, const Cluster& cluster,
                        const std::vector<std::unique_ptr<JobRunner>>& jobs, Network* net,
                        SimFlowSink* sink, int64_t begin_ns, int64_t end_ns, std::mt19937_64* rng) {
  if (cluster.num_storage() == 0) return;
  const NoiseConfig& n = config.noise;
  std::uniform_int_distribution<int64_t> phase(0, SecondsToNs(5));
  if (n.checkpoint_period_s > 0) {
    for (const auto& job : jobs) {
      for (int64_t t = begin_ns + phase(*rng); t < end_ns; t += SecondsToNs(n.checkpoint_period_s)) {
        std::vector<TransferRequest> group;
        for (int r = 0; r < job->num_ranks(); ++r) {
          int gpu = job->Endpoint(r);
          int storage = cluster.StorageEndpoint(gpu % cluster.num_storage());
          group.push_back({gpu, storage, QpNumber(gpu, storage, 0, config.seed), t,
                           static_cast<uint64_t>(n.checkpoint_mib * kMiB / job->num_ranks())});
        }
        auto placed = net->Place(group);
        for (size_t i = 0; i < group.size(); ++i)
          sink->Emit({group[i].src, group[i].dst, group[i].qp, t, placed[i].end_ns, group[i].bytes,
                      placed[i].route, -1, FlowKind::kStorage});
      }
    }
  }
  if (n.dataload_period_s > 0) {
    for (int host = 0; host * kGpusPerHost < cluster.num_gpus(); ++host) {
      int gpu = host * kGpusPerHost;
      int storage = cluster.StorageEndpoint(host % cluster.num_storage());
      for (int64_t t = begin_ns + phase(*rng); t < end_ns; t += SecondsToNs(n.dataload_period_s)) {
        TransferRequest req{storage, gpu, QpNumber(storage, gpu, 0, config.seed), t, 8u << 20};
        auto placed = net->Place({req});
        sink->Emit({storage, gpu, req.qp, t, placed[0].end_ns, req.bytes, placed[0].route, -1,
                    FlowKind::kStorage});
      }
    }
  }
}

// The faults of the scenario, installed: capacity faults on the network (and watched by the
// emitter, so the truth can name the jobs they touched); stragglers per job, for the job runners.
struct FaultPlan {
  std::vector<std::vector<StragglerSpan>> stragglers;  // by job
  std::vector<size_t> watched_index;  // by fault: its index among the watched ones, or SIZE_MAX
};

FaultPlan InstallFaults(const SimConfig& config, const Cluster& cluster, int64_t window_start,
                        Network* net, RecordEmitter* emitter) {
  FaultPlan plan;
  plan.stragglers.resize(config.jobs.size());
  plan.watched_index.assign(config.faults.size(), SIZE_MAX);
  size_t watched = 0;
  for (size_t i = 0; i < config.faults.size(); ++i) {
    const FaultConfig& f = config.faults[i];
    int64_t s = window_start + SecondsToNs(f.start_s), e = window_start + SecondsToNs(f.end_s);
    if (f.kind == FaultKind::kStraggler) {
      plan.stragglers[f.job].push_back({f.rank, f.factor, s, e});
    } else if (f.kind == FaultKind::kStall) {
      // Applied to the job's runner once it exists (MakeJobRunners).
    } else {
      CapacityFault cf{cluster.FindSwitch(f.switch_a),
                       f.kind == FaultKind::kCongestedLink ? cluster.FindSwitch(f.switch_b) : -1,
                       f.factor, s, e};
      if (f.kind == FaultKind::kDegradedLink) {
        cf.switch_a = -1;
        cf.endpoint = config.jobs[f.job].first_host * kGpusPerHost + f.rank;
      }
      net->AddFault(cf);
      emitter->WatchFault(cf);
      plan.watched_index[i] = watched++;
    }
  }
  return plan;
}

std::vector<std::unique_ptr<JobRunner>> MakeJobRunners(
    const SimConfig& config, const Cluster& cluster, const FaultPlan& plan, int64_t sim_start,
    int64_t window_start, Network* net, RecordEmitter* emitter) {
  std::vector<std::unique_ptr<JobRunner>> jobs;
  for (size_t i = 0; i < config.jobs.size(); ++i)
    jobs.push_back(std::make_unique<JobRunner>(int(i), config.jobs[i], &cluster, net, emitter,
                                               plan.stragglers[i], config.seed, sim_start,
                                               config.noise.post_jitter_us));
  for (const FaultConfig& f : config.faults) {
    if (f.kind == FaultKind::kStall)
      jobs[f.job]->AddStall(window_start + SecondsToNs(f.start_s), window_start + SecondsToNs(f.end_s));
  }
  return jobs;
}

// The truth of job `index`: its layout, GPUs by stage, hosts, and each GPU's steps that lie wholly
// inside the window (appended to `timelines`).
TruthJob DescribeJob(const JobRunner& job, size_t index, const Cluster& cluster,
                     int64_t window_start, int64_t window_end,
                     std::vector<TruthTimeline>* timelines) {
  const JobConfig& jc = job.config();
  TruthJob tj;
  tj.id = fmt::format("job{}", index);
  tj.dp = jc.dp;
  tj.pp = jc.pp;
  tj.tp = jc.tp;
  tj.microbatches = jc.microbatches;
  tj.schedule = jc.schedule == Schedule::kGPipe ? "gpipe" : "1f1b";
  tj.zero = jc.zero;
  tj.stages.resize(jc.pp);
  for (int r = 0; r < job.num_ranks(); ++r) {
    int e = job.Endpoint(r);
    tj.gpus.push_back(IpName(cluster, e));
    tj.stages[job.StageOfRank(r)].push_back(IpName(cluster, e));
    std::string host = cluster.HostName(cluster.HostOf(e));
    if (tj.hosts.empty() || tj.hosts.back() != host) tj.hosts.push_back(host);
    TruthTimeline tl;
    tl.gpu = IpName(cluster, e);
    tl.job = tj.id;
    const auto& steps = job.Steps(r);
    for (size_t k = 1; k < steps.size(); ++k) {
      TruthStep ts{steps[k - 1].end_ns, steps[k].end_ns, steps[k].dp_start_ns,
                   steps[k].dp_end_ns};
      if (ts.start_ns >= window_start && ts.end_ns <= window_end) tl.steps.push_back(ts);
    }
    timelines->push_back(std::move(tl));
  }
  return tj;
}

// Pairs, in address order, labelled by the job that owns both GPUs.
std::vector<TruthPair> DescribePairs(const Cluster& cluster,
                                     const std::vector<std::unique_ptr<JobRunner>>& jobs,
                                     const RecordEmitter& emitter) {
  std::vector<TruthPair> pairs;
  std::vector<int> job_of(cluster.num_gpus(), -1);
  for (size_t i = 0; i < jobs.size(); ++i)
    for (int r = 0; r < jobs[i]->num_ranks(); ++r) job_of[jobs[i]->Endpoint(r)] = int(i);
  for (const auto& [key, is_dp] : emitter.pairs()) {
    int lo = int(key >> 32), hi = int(key & 0xffffffffu);
    IpAddr a = cluster.Ip(lo), b = cluster.Ip(hi);
    if (b < a) std::swap(a, b);
    pairs.push_back({a.ToString(), b.ToString(), fmt::format("job{}", job_of[lo]),
                     is_dp ? "dp" : "pp"});
  }
  std::sort(pairs.begin(), pairs.end(), [](const TruthPair& x, const TruthPair& y) {
    auto ax = IpAddr::Parse(x.a), bx = IpAddr::Parse(x.b), ay = IpAddr::Parse(y.a),
         by = IpAddr::Parse(y.b);
    return std::tie(*ax, *bx) < std::tie(*ay, *by);
  });
  return pairs;
}

// The truth of fault `index`: its kind and cause as the evaluation names them, when it acted,
// and the GPUs, switches and jobs it touched.
TruthFault DescribeFault(const SimConfig& config, size_t index, const Cluster& cluster,
                         const std::vector<std::unique_ptr<JobRunner>>& jobs,
                         const RecordEmitter& emitter, const FaultPlan& plan,
                         int64_t window_start) {
  const FaultConfig& f = config.faults[index];
  TruthFault tf;
  tf.id = fmt::format("f{}", index);
  tf.start_ns = window_start + SecondsToNs(f.start_s);
  tf.end_ns = window_start + SecondsToNs(f.end_s);
  tf.factor = f.factor;
  if (f.kind == FaultKind::kStraggler) {
    tf.kind = "straggler";
    tf.cause = "gpu";
    tf.gpus.push_back(IpName(cluster, jobs[f.job]->Endpoint(f.rank)));
    tf.jobs.push_back(fmt::format("job{}", f.job));
  } else if (f.kind == FaultKind::kStall) {
    tf.kind = "stall";
    tf.cause = "unknown";
    tf.jobs.push_back(fmt::format("job{}", f.job));
  } else if (f.kind == FaultKind::kDegradedLink) {
    tf.kind = "degraded_link";
    tf.cause = "network";
    const int endpoint = jobs[f.job]->Endpoint(f.rank);
    tf.gpus.push_back(IpName(cluster, endpoint));
    tf.switches.push_back(cluster.SwitchName(cluster.LeafOf(endpoint)));
    for (int j : emitter.JobsTouching(plan.watched_index[index])) {
      tf.jobs.push_back(fmt::format("job{}", j));
    }
  } else {
    tf.kind = f.kind == FaultKind::kDegradedSwitch ? "degraded_switch" : "congested_link";
    tf.cause = "network";
    tf.switches.push_back(f.switch_a);
    if (f.kind == FaultKind::kCongestedLink) tf.switches.push_back(f.switch_b);
    for (int j : emitter.JobsTouching(plan.watched_index[index])) {
      tf.jobs.push_back(fmt::format("job{}", j));
    }
  }
  return tf;
}

// The fabric's own congestion within the window, by switch names as the records carry them.
std::vector<TruthFabricEvent> DescribeCongestion(const CongestionLog& log, const Cluster& cluster,
                                                 int64_t window_start, int64_t window_end) {
  std::vector<TruthFabricEvent> out;
  for (const CongestionEvent& e : log.Events()) {
    if (e.end_ns <= window_start || e.start_ns >= window_end) continue;
    TruthFabricEvent te;
    te.switches = {cluster.SwitchName(e.leaf), cluster.SwitchName(e.spine)};
    te.direction = e.up ? "up" : "down";
    te.start_ns = std::max(e.start_ns, window_start);
    te.end_ns = std::min(e.end_ns, window_end);
    te.squeezed_share = e.squeezed_share;
    out.push_back(std::move(te));
  }
  return out;
}

}  // namespace

StatusOr<Truth> Simulate(const SimConfig& input_config, const Cluster& cluster, FlowSink* out,
                         PointTable* points) {
  SimConfig config = input_config;
  ResolveAutoLinks(&config, cluster);
  PRISM_RETURN_IF_ERROR(Validate(config, cluster));
  const int64_t window_start = config.start_ns;
  const int64_t window_end = config.start_ns + SecondsToNs(config.duration_s);
  const int64_t sim_start = window_start - SecondsToNs(config.warmup_s);

  Network net(&cluster);
  CongestionLog congestion;
  net.set_congestion_log(&congestion);
  RecordEmitter emitter(&cluster, &net, config.noise, config.seed, window_start, window_end, out,
                        points);
  const FaultPlan plan = InstallFaults(config, cluster, window_start, &net, &emitter);
  std::vector<std::unique_ptr<JobRunner>> jobs =
      MakeJobRunners(config, cluster, plan, sim_start, window_start, &net, &emitter);
  // Global time order: always advance the job whose next step starts first.
  while (!jobs.empty()) {
    JobRunner* next = nullptr;
    for (auto& j : jobs)
      if (!next || j->NextStepStart() < next->NextStepStart()) next = j.get();
    if (next->NextStepStart() >= window_end) break;
    next->RunStep();
  }
  std::mt19937_64 rng(config.seed * 31 + 7);
  EmitStorageTraffic(config, cluster, jobs, &net, &emitter, window_start, window_end, &rng);

  Truth truth;
  truth.scenario = config.name;
  truth.seed = config.seed;
  truth.start_ns = window_start;
  truth.end_ns = window_end;
  truth.records = emitter.records();
  for (size_t i = 0; i < jobs.size(); ++i) {
    truth.jobs.push_back(
        DescribeJob(*jobs[i], i, cluster, window_start, window_end, &truth.timelines));
  }
  truth.pairs = DescribePairs(cluster, jobs, emitter);
  for (size_t i = 0; i < config.faults.size(); ++i) {
    truth.faults.push_back(DescribeFault(config, i, cluster, jobs, emitter, plan, window_start));
  }
  truth.fabric_events = DescribeCongestion(congestion, cluster, window_start, window_end);
  return truth;
}

}  // namespace prism::sim
