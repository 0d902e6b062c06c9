// File: apps/llmprism/simulate_cmd.cc
// `llmprism simulate --scenario NAME --out DIR [--seed N]` runs a named scenario of the cluster
// simulator (src/sim) and writes DIR/flows.ipfix, DIR/flows.csv (small scenarios only,
// SimConfig::write_csv), DIR/topology.csv and DIR/truth.json, and with `--emit pcap` DIR/flows.pcap
// (sim/packet_emitter.h), with `--emit sflow --sampling N` DIR/sflow.pcap (sim/sflow_emitter.h:
// flow samples, and counter samples of the GPU NICs' leaf ports polled as --poll, --refresh and
// --poll-jitter say) and DIR/topology_sflow_ports.csv (those ports as AGENT,IFINDEX -> server).
// Records stream from the simulator
// to the file writers through one tee sink: nothing is buffered beyond the writers' own buffers.
// `llmprism simulate --list` prints the scenarios. Exit code 0 ok, 2 bad arguments or I/O error.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_checks.h"

#include "core/name_table.h"
#include "core/status.h"
#include "counters/port_counters.h"
#include "counters/sflow_counters.h"
#include "io/flow_csv.h"
#include "io/ipfix_file.h"
#include "io/topology_csv.h"
#include "sim/cluster.h"
#include "sim/packet_emitter.h"
#include "sim/sflow_emitter.h"
#include "sim/port_counter_sink.h"
#include "sim/scenarios.h"
#include "sim/simulator.h"
#include "sim/truth.h"

namespace {

namespace fs = std::filesystem;

struct SimulateArgs {
  std::string scenario;
  std::string out_dir;
  uint64_t seed = 1;
  bool list = false;
  // Comma list of flows, counters, both, pcap, sflow (pcap and sflow imply flows).
  std::string emit = "flows";
  uint32_t sampling = 1000;    // --emit sflow: 1-in-N
  int erspan = 0;              // pcap: 0 plain capture, 2 / 3 ERSPAN type
  uint32_t snaplen = 128;      // pcap: bytes captured per packet
  double poll_s = 1, refresh_s = 1, poll_jitter = 0.1;
  double duration_s = 0;       // 0: the scenario's
};

// Hands every record to each sink in turn and counts them.
class TeeSink : public prism::FlowSink {
 public:
  explicit TeeSink(std::vector<prism::FlowSink*> sinks) : sinks_(std::move(sinks)) {}
  void OnRecord(const prism::FlowRecord& r) override {
    ++records_;
    for (prism::FlowSink* s : sinks_) s->OnRecord(r);
  }
  uint64_t records() const { return records_; }

 private:
  std::vector<prism::FlowSink*> sinks_;
  uint64_t records_ = 0;
};

prism::StatusOr<std::unique_ptr<std::ofstream>> OpenOut(const fs::path& path) {
  auto out = std::make_unique<std::ofstream>(path, std::ios::binary | std::ios::trunc);
  if (!*out) {
    return prism::MakeError(prism::ErrorCode::kInvalidArgument, "{}: cannot open for writing",
                            path.string());
  }
  return out;
}

prism::Status CloseOut(std::ofstream* out, const fs::path& path) {
  out->close();
  if (!*out) return prism::MakeError(prism::ErrorCode::kDataLoss, "{}: write failed", path.string());
  return prism::OkStatus();
}

std::string HumanBytes(uintmax_t n) {
  if (n >= (1u << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(n) / (1u << 30));
  if (n >= (1u << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1u << 20));
  if (n >= (1u << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(n) / (1u << 10));
  return fmt::format("{} B", n);
}

std::vector<std::string_view> SplitEmit(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    size_t comma = s.find(',');
    out.push_back(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

// What --emit asks for: "flows", "counters", "both", "pcap" and "sflow" (each of which implies
// flows: the capture's reference is the flow file), comma-separated.
struct EmitChoice {
  bool flows = false, counters = false, pcap = false, sflow = false;
};

prism::StatusOr<EmitChoice> ParseEmit(const std::string& list) {
  EmitChoice emit;
  for (std::string_view e : SplitEmit(list)) {
    if (e == "flows" || e == "both") emit.flows = true;
    if (e == "counters" || e == "both") emit.counters = true;
    if (e == "pcap") emit.pcap = emit.flows = true;
    if (e == "sflow") emit.sflow = emit.flows = true;
    if (e != "flows" && e != "counters" && e != "both" && e != "pcap" && e != "sflow") {
      return prism::MakeError(prism::ErrorCode::kInvalidArgument,
                              "--emit: unknown output '{}' (flows, counters, both, pcap, sflow)",
                              e);
    }
  }
  return emit;
}

// DIR/topology.csv: the cluster's GPUs, hosts and leaves.
prism::Status WriteTopology(const prism::sim::Cluster& cluster, const fs::path& dir,
                            std::vector<fs::path>* written) {
  const fs::path topo_path = dir / "topology.csv";
  PRISM_ASSIGN_OR_RETURN(auto topo_out, OpenOut(topo_path));
  PRISM_RETURN_IF_ERROR(prism::io::WriteTopologyCsv(cluster.MakeTopology(), topo_out.get()));
  PRISM_RETURN_IF_ERROR(CloseOut(topo_out.get(), topo_path));
  written->push_back(topo_path);
  return prism::OkStatus();
}

// Counters mode: DIR/counters.csv, the GPU NICs' ports polled as --poll, --refresh and
// --poll-jitter say, and DIR/topology_ports.csv.
prism::sim::PollOptions PollOptionsOf(const SimulateArgs& args) {
  prism::sim::PollOptions po;
  po.poll_s = args.poll_s;
  po.refresh_s = args.refresh_s;
  po.poll_jitter = args.poll_jitter;
  po.seed = args.seed;
  return po;
}

prism::Status WritePortCounters(const prism::sim::PortCounterSink& port_counters,
                                const SimulateArgs& args, const fs::path& dir,
                                std::vector<fs::path>* written) {
  const prism::sim::PollOptions po = PollOptionsOf(args);
  const fs::path counters_path = dir / "counters.csv";
  const fs::path ports_path = dir / "topology_ports.csv";
  PRISM_ASSIGN_OR_RETURN(auto counters_out, OpenOut(counters_path));
  PRISM_RETURN_IF_ERROR(
      prism::counters::WriteCountersCsv(port_counters.Poll(po), counters_out.get()));
  PRISM_RETURN_IF_ERROR(CloseOut(counters_out.get(), counters_path));
  PRISM_ASSIGN_OR_RETURN(auto ports_out, OpenOut(ports_path));
  PRISM_RETURN_IF_ERROR(
      prism::counters::WritePortTopologyCsv(port_counters.Topology(), ports_out.get()));
  PRISM_RETURN_IF_ERROR(CloseOut(ports_out.get(), ports_path));
  written->push_back(counters_path);
  written->push_back(ports_path);
  return prism::OkStatus();
}

// sFlow counter samples: the same polls as --emit counters, each GPU NIC's leaf port exported by
// the leaf's agent as interface host + 1; DIR/topology_sflow_ports.csv names those ports as
// `analyze --sflow-counters` does (agent address, ifIndex).
prism::Status AddSflowCounters(const prism::sim::PortCounterSink& port_counters,
                               const prism::sim::Cluster& cluster, prism::PointTable* points,
                               const SimulateArgs& args, const fs::path& dir,
                               prism::sim::SflowEmitter* sflow, std::vector<fs::path>* written) {
  auto port_of = [&](int endpoint) {
    const prism::PointId leaf = points->Intern(cluster.SwitchName(cluster.LeafOf(endpoint)));
    return std::make_pair(leaf, static_cast<uint32_t>(cluster.HostOf(endpoint) + 1));
  };
  port_counters.PollCumulative(
      PollOptionsOf(args), [&](int e, int64_t ts_ns, uint64_t in_bytes, uint64_t out_bytes) {
        const auto [leaf, if_index] = port_of(e);
        sflow->AddCounterPoll({.point = leaf, .if_index = if_index, .ts_ns = ts_ns,
                               .in_octets = in_bytes, .out_octets = out_bytes});
      });
  const fs::path ports_path = dir / "topology_sflow_ports.csv";
  PRISM_ASSIGN_OR_RETURN(auto ports_out, OpenOut(ports_path));
  PRISM_RETURN_IF_ERROR(prism::counters::WritePortTopologyCsv(
      port_counters.Topology([&](int e) {
        const auto [leaf, if_index] = port_of(e);
        return std::make_pair(prism::sim::SflowEmitter::AgentAddress(leaf).ToString(),
                              prism::counters::SflowPortName(if_index));
      }),
      ports_out.get()));
  PRISM_RETURN_IF_ERROR(CloseOut(ports_out.get(), ports_path));
  written->push_back(ports_path);
  return prism::OkStatus();
}

// Each file written with its size.
void PrintWritten(const std::vector<fs::path>& written) {
  std::error_code ec;
  for (const fs::path& p : written) {
    fmt::print("{:<40} {:>10}\n", p.string(), HumanBytes(fs::file_size(p, ec)));
  }
}

// The writers of one run: every sink the simulator feeds, opened by what --emit asks for.
struct RunOutputs {
  fs::path ipfix_path, csv_path;
  std::unique_ptr<std::ofstream> ipfix_out, csv_out;
  std::unique_ptr<prism::io::IpfixFileWriter> ipfix;  // always opened; kept for --emit flows
  std::unique_ptr<prism::io::FlowCsvWriter> csv;
  // Counters mode and sFlow's counter samples: per-port byte counters of every GPU NIC, polled
  // after the run.
  std::unique_ptr<prism::sim::PortCounterSink> port_counters;
  std::unique_ptr<prism::sim::PacketEmitter> packets;
  std::unique_ptr<prism::sim::SflowEmitter> sflow;
  std::vector<prism::FlowSink*> sinks;
};

// The writers look switch names up in `points` as records arrive; the simulator interns a name
// before it emits a record that uses it.
prism::StatusOr<RunOutputs> OpenOutputs(const SimulateArgs& args, const EmitChoice& emit,
                                        const prism::sim::SimConfig& config,
                                        prism::sim::Cluster* cluster, prism::PointTable* points,
                                        const fs::path& dir) {
  RunOutputs out;
  out.ipfix_path = dir / "flows.ipfix";
  out.csv_path = dir / "flows.csv";
  PRISM_ASSIGN_OR_RETURN(out.ipfix_out, OpenOut(out.ipfix_path));
  out.ipfix = std::make_unique<prism::io::IpfixFileWriter>(out.ipfix_out.get(), points);
  if (emit.flows) out.sinks.push_back(out.ipfix.get());
  if (emit.counters || emit.sflow) {
    out.port_counters = std::make_unique<prism::sim::PortCounterSink>(
        cluster, config.start_ns,
        config.start_ns + static_cast<int64_t>(config.duration_s * 1e9));
    out.sinks.push_back(out.port_counters.get());
  }
  if (config.write_csv && emit.flows) {
    PRISM_ASSIGN_OR_RETURN(out.csv_out, OpenOut(out.csv_path));
    out.csv = std::make_unique<prism::io::FlowCsvWriter>(out.csv_out.get(), points);
    out.sinks.push_back(out.csv.get());
  }
  prism::sim::PacketEmitOptions packet_options;
  packet_options.erspan_type = args.erspan;
  packet_options.snaplen = args.snaplen;
  out.packets = std::make_unique<prism::sim::PacketEmitter>(packet_options);
  if (emit.pcap) out.sinks.push_back(out.packets.get());
  prism::sim::SflowEmitOptions sflow_options;
  sflow_options.sampling_rate = args.sampling;
  sflow_options.snaplen = args.snaplen;
  sflow_options.seed = args.seed;
  out.sflow = std::make_unique<prism::sim::SflowEmitter>(sflow_options);
  if (emit.sflow) out.sinks.push_back(out.sflow.get());
  return out;
}

// Finishes and closes every output of the run, adding the files to `written`.
prism::Status FinishOutputs(RunOutputs& out, const SimulateArgs& args, const EmitChoice& emit,
                            const prism::sim::Cluster& cluster, prism::PointTable* points,
                            const fs::path& dir, std::vector<fs::path>* written) {
  PRISM_RETURN_IF_ERROR(out.ipfix->Finish());
  PRISM_RETURN_IF_ERROR(CloseOut(out.ipfix_out.get(), out.ipfix_path));
  if (emit.flows) {
    written->push_back(out.ipfix_path);
  } else {
    std::error_code ec;
    fs::remove(out.ipfix_path, ec);
  }
  if (emit.counters) {
    PRISM_RETURN_IF_ERROR(WritePortCounters(*out.port_counters, args, dir, written));
  }
  if (out.csv != nullptr) {
    out.csv->Flush();
    PRISM_RETURN_IF_ERROR(CloseOut(out.csv_out.get(), out.csv_path));
    written->push_back(out.csv_path);
  }
  if (emit.pcap) {
    const fs::path pcap_path = dir / "flows.pcap";
    PRISM_RETURN_IF_ERROR(out.packets->Write(pcap_path.string()));
    written->push_back(pcap_path);
  }
  if (emit.sflow) {
    PRISM_RETURN_IF_ERROR(AddSflowCounters(*out.port_counters, cluster, points, args, dir,
                                           out.sflow.get(), written));
    const fs::path sflow_path = dir / "sflow.pcap";
    PRISM_RETURN_IF_ERROR(out.sflow->Write(sflow_path.string()));
    written->push_back(sflow_path);
  }
  return prism::OkStatus();
}

prism::Status RunSimulate(const SimulateArgs& args) {
  auto start = std::chrono::steady_clock::now();
  PRISM_ASSIGN_OR_RETURN(prism::sim::SimConfig config,
                         prism::sim::MakeScenario(args.scenario, args.seed));
  if (args.duration_s > 0) config.duration_s = args.duration_s;
  PRISM_ASSIGN_OR_RETURN(const EmitChoice emit, ParseEmit(args.emit));
  const fs::path dir(args.out_dir);
  std::error_code ec;
  if (fs::create_directories(dir, ec); ec) {
    return prism::MakeError(prism::ErrorCode::kInvalidArgument, "{}: cannot create directory: {}",
                            dir.string(), ec.message());
  }

  prism::sim::Cluster cluster(config.fabric);
  std::vector<fs::path> written;
  PRISM_RETURN_IF_ERROR(WriteTopology(cluster, dir, &written));

  prism::PointTable points;
  PRISM_ASSIGN_OR_RETURN(RunOutputs out, OpenOutputs(args, emit, config, &cluster, &points, dir));
  TeeSink tee(out.sinks);
  PRISM_ASSIGN_OR_RETURN(prism::sim::Truth truth,
                         prism::sim::Simulate(config, cluster, &tee, &points));
  PRISM_RETURN_IF_ERROR(FinishOutputs(out, args, emit, cluster, &points, dir, &written));

  const fs::path truth_path = dir / "truth.json";
  PRISM_ASSIGN_OR_RETURN(auto truth_out, OpenOut(truth_path));
  PRISM_RETURN_IF_ERROR(prism::sim::WriteTruthJson(truth, truth_out.get()));
  PRISM_RETURN_IF_ERROR(CloseOut(truth_out.get(), truth_path));
  written.push_back(truth_path);

  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PrintWritten(written);
  fmt::print("scenario {} (seed {}): {} records, {} jobs, {} faults, {:.2f}s wall\n", config.name,
             args.seed, tee.records(), truth.jobs.size(), truth.faults.size(), wall_s);
  return prism::OkStatus();
}

int Run(const SimulateArgs& args) {
  if (args.list) {
    for (const auto& s : prism::sim::ListScenarios()) {
      fmt::print("{:<12} {}\n", s.name, s.description);
    }
    return 0;
  }
  if (args.scenario.empty() || args.out_dir.empty()) {
    fmt::print(stderr, "llmprism simulate: --scenario and --out are required (or --list)\n");
    return 2;
  }
  if (auto status = RunSimulate(args); !status) {
    fmt::print(stderr, "llmprism simulate: {}\n", status.error().message);
    return 2;
  }
  return 0;
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Simulate a training cluster: flow records plus ground truth");
  cmd->add_option("--scenario", args->scenario, "Scenario name (see --list)");
  cmd->add_option("--out", args->out_dir, "Output directory (created if missing)");
  cmd->add_option("--seed", args->seed, "Random seed")->capture_default_str();
  cmd->add_flag("--list", args->list, "List the scenarios and exit");
  cmd->add_option("--erspan", args->erspan,
                  "With --emit pcap: wrap packets in ERSPAN type 2 or 3 (0 = plain capture)")
      ->capture_default_str()
      ->check(CLI::IsMember({0, 2, 3}));
  cmd->add_option("--snaplen", args->snaplen,
                  "With --emit pcap: bytes captured per packet (lengths stay in the headers)")
      ->capture_default_str()
      ->check(CLI::Range(64, 65535));
  cmd->add_option("--emit", args->emit,
                  "flows (IPFIX + CSV), counters (per-port byte counters: counters.csv and "
                  "topology_ports.csv) or both; 'pcap' adds DIR/flows.pcap to the flows: every "
                  "record as a RoCEv2 RDMA WRITE segmented at 4096 bytes (small scenarios only, "
                  "e.g. pcap-tiny); 'sflow' adds DIR/sflow.pcap: the sFlow v5 datagrams the "
                  "switches' agents would export, sampling 1 in --sampling packets, with counter "
                  "samples of the GPU ports polled as --poll/--refresh say "
                  "(topology_sflow_ports.csv maps them). "
                  "Comma-separated: --emit flows,counters,pcap")
      ->capture_default_str();
  cmd->add_option("--sampling", args->sampling,
                  "With --emit sflow: sample 1 in N packets (random skip, mean N)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1'000'000u));
  cmd->add_option("--poll", args->poll_s,
                  "Counters and sFlow counter samples: poll interval in seconds")
      ->capture_default_str()
      ->check(cli_checks::kPositive);
  cmd->add_option("--refresh", args->refresh_s,
                  "Counters: the switch's counter refresh period in seconds (0: exact)")
      ->capture_default_str()
      ->check(cli_checks::kNonNegative);
  cmd->add_option("--poll-jitter", args->poll_jitter, "Counters: relative sigma of poll intervals")
      ->capture_default_str()
      ->check(cli_checks::kNonNegative);
  cmd->add_option("--duration", args->duration_s, "Override the scenario's duration (seconds)");
  cmd->callback([args, exit_code] { *exit_code = Run(*args); });
}
