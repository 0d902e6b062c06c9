// File: apps/llmprism/recognise_cmd.cc
// `llmprism recognise --nats URL --shards N [--topology T] [--window S --step S]`: the
// recogniser of a sharded scale-out (service/recogniser.h, docs/scale-out.md, Sharding by job).
// Runs until SIGTERM or SIGINT, then recognises what is pending and forwards what it holds.
// Exit 1 when the stream cannot be reached at start or a round fails for 30 s on end.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_checks.h"
#include "core/stats.h"
#include "core/topology.h"
#include "io/topology_csv.h"
#include "service/recogniser.h"

namespace {

struct RecogniseArgs {
  std::string nats;
  std::string topology;
  int shards = 2;
  int replicas = 1;
  double window_s = 60, step_s = 10;
};

volatile sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

// Rounds until stopped; a round that fails is tried again every second, for up to 30 s.
int RunRounds(prism::service::Recogniser& r) {
  auto failing_since = std::optional<std::chrono::steady_clock::time_point>();
  while (!g_stop) {
    if (auto st = r.Step(); !st) {
      const auto now = std::chrono::steady_clock::now();
      if (!failing_since) {
        fmt::print(stderr, "llmprism recognise: {}; retrying every second\n", st.error().message);
        failing_since = now;
      } else if (now - *failing_since > std::chrono::seconds(30)) {
        fmt::print(stderr, "llmprism recognise: giving up: {}\n", st.error().message);
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    failing_since.reset();
  }
  return 0;
}

int RunRecognise(const RecogniseArgs& args) {
  prism::service::RecogniserOptions o;
  o.url = args.nats;
  o.shards = args.shards;
  o.replicas = args.replicas;
  o.window_ns = std::llround(args.window_s * 1e9);
  o.step_ns = std::llround(args.step_s * 1e9);
  std::optional<prism::Topology> topology;
  if (!args.topology.empty()) {
    prism::Stats stats;
    auto topo = prism::io::ReadTopologyCsv(args.topology, &stats);
    if (!topo) {
      fmt::print(stderr, "llmprism recognise: {}\n", topo.error().message);
      return 2;
    }
    topology = std::move(*topo);
    o.topology = &*topology;
  }
  auto r = prism::service::Recogniser::Open(o);
  if (!r) {
    fmt::print(stderr, "llmprism recognise: {}\n", r.error().message);
    return 1;
  }
  fmt::print(stderr, "llmprism recognise: {} shards, pair graph of {} s windows on {}\n",
             args.shards, args.window_s, args.nats);
  signal(SIGTERM, OnStopSignal);
  signal(SIGINT, OnStopSignal);
  int rc = RunRounds(**r);
  if (auto st = (*r)->Finish(); !st) {
    fmt::print(stderr, "llmprism recognise: at shutdown: {}\n", st.error().message);
    rc = 1;
  }
  const auto& c = (*r)->counters();
  fmt::print(stderr,
             "llmprism recognise: stopped: {} pair summaries ({} sightings), {} bad "
             "messages, {} recognitions, {} jobs, {} GPUs mapped, {} unrouted records read, "
             "{} forwarded (by shard {}, no job {}), {} still held\n",
             c.pair_messages, c.pair_sightings, c.bad_messages, c.recognitions, c.jobs,
             (*r)->mapped_gpus(), c.unrouted_records, c.forwarded_records, c.forwarded_by_shard,
             c.forwarded_no_job, c.held_records);
  return rc;
}

}  // namespace

void RegisterRecogniseCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RecogniseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "recognise",
      "Scale-out sharded by job: keep the pair graph from the collectors' pair "
      "summaries, publish GPU -> job -> shard, forward records of unknown endpoints "
      "(docs/scale-out.md)");
  cmd->add_option("--nats", args->nats,
                  "NATS JetStream server(s), nats://HOST:PORT "
                  "(a cluster: comma-separated)")
      ->required();
  cmd->add_option("--shards", args->shards, "Shards the jobs are spread over (one analyser each)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--topology", args->topology,
                  "Topology CSV: which endpoints are GPUs and their hosts, as for serve");
  cmd->add_option("--window", args->window_s,
                  "The analysers' window in seconds: pairs older "
                  "than this leave the graph")
      ->capture_default_str()
      ->check(cli_checks::kPositive);
  cmd->add_option("--step", args->step_s, "The analysers' step in seconds")
      ->capture_default_str()
      ->check(cli_checks::kPositive);
  cmd->add_option("--nats-replicas", args->replicas,
                  "Copies of the streams and the bucket when created here")
      ->capture_default_str()
      ->check(CLI::Range(1, 5));
  cmd->callback([args, exit_code] { *exit_code = RunRecognise(*args); });
}
