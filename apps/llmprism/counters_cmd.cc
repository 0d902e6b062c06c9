// File: apps/llmprism/counters_cmd.cc
// `llmprism analyze COUNTERS.csv[.zst]... --topology PORTS.csv` and
// `llmprism analyze --prometheus URL --prom-start T --prom-end T --topology PORTS.csv` and
// `llmprism analyze --sflow-counters SFLOW.pcap... --topology PORTS.csv`: diagnosis from switch
// port byte counters (counters/), same report schema and summary as flow analysis.
#include "counters_cmd.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "output_file.h"

#include "core/stats.h"
#include "counters/counters_analysis.h"
#include "counters/port_counters.h"
#include "counters/prometheus_source.h"
#include "counters/sflow_counters.h"
#include "output/counters_report.h"
#include "output/html_report.h"
#include "output/report_json.h"
#include "output/text_summary.h"

void AddCountersOptions(CLI::App* cmd, CountersCliArgs* a) {
  cmd->add_option("--counter-kind", a->counter_kind,
                  "Counters mode: values are delta, cumulative or auto (detected)")
      ->capture_default_str();
  cmd->add_flag("--sflow-counters", a->sflow,
               "Counters mode on the inputs' sFlow counter samples (pcap/pcapng of sFlow v5 "
               "datagrams): each agent's ifIndex is a port, named AGENT_ADDRESS,IFINDEX in the "
               "port topology");
  cmd->add_option("--bin", a->bin_s, "Counters mode: resampling bin in seconds (0: refresh / 4)");
  cmd->add_option("--refresh", a->refresh_s,
                  "Counters mode: the switch's counter refresh period in seconds (0: measured)");
  cmd->add_option("--max-gap", a->max_gap_s,
                  "Counters mode: poll gaps longer than this (seconds) are missing data")
      ->capture_default_str();
  cmd->add_option("--gpus-per-server", a->gpus_per_server,
                  "Counters mode: GPUs behind each server, for the GPU time a finding costs")
      ->capture_default_str();
  cmd->add_option("--warn-gpu-s", a->warn_gpu_s,
                  "Counters mode: GPU-seconds lost from which a slow episode is a warning")
      ->capture_default_str();
  cmd->add_option("--critical-gpu-s", a->critical_gpu_s,
                  "Counters mode: GPU-seconds lost from which a finding is critical")
      ->capture_default_str();
  cmd->add_option("--prometheus", a->prometheus,
                  "Counters mode: read port counters from this Prometheus server (http://host:port)");
  cmd->add_option("--prom-in-metric", a->prom_in_metric, "Counter of bytes into the switch port")
      ->capture_default_str();
  cmd->add_option("--prom-out-metric", a->prom_out_metric, "Counter of bytes out of the switch port")
      ->capture_default_str();
  cmd->add_option("--prom-switch-label", a->prom_switch_label, "Label naming the switch")
      ->capture_default_str();
  cmd->add_option("--prom-port-label", a->prom_port_label, "Label naming the port")
      ->capture_default_str();
  cmd->add_option("--prom-matchers", a->prom_matchers, "Extra label matchers, e.g. job=\"snmp\"");
  cmd->add_option("--prom-start", a->prom_start, "Start: Unix seconds or 2024-05-24T00:00:00Z");
  cmd->add_option("--prom-end", a->prom_end, "End: Unix seconds or RFC 3339 (UTC)");
}

namespace {

// Polls of the port counters from Prometheus (--prometheus, --prom-*), named as the source.
prism::StatusOr<prism::counters::CountersData> ReadFromPrometheus(
    const CountersCliArgs& args, prism::counters::CounterKind kind, prism::Stats* stats,
    std::vector<prism::output::CountersSource>* sources) {
  if (!args.inputs.empty()) {
    return prism::MakeError(prism::ErrorCode::kInvalidArgument,
                            "give either counter files or --prometheus, not both");
  }
  prism::counters::PrometheusOptions po;
  po.url = args.prometheus;
  po.in_metric = args.prom_in_metric;
  po.out_metric = args.prom_out_metric;
  po.switch_label = args.prom_switch_label;
  po.port_label = args.prom_port_label;
  po.matchers = args.prom_matchers;
  po.kind = kind == prism::counters::CounterKind::kAuto ? prism::counters::CounterKind::kCumulative
                                                        : kind;
  auto s = prism::counters::ParseTimeMs(args.prom_start);
  auto e = prism::counters::ParseTimeMs(args.prom_end);
  if (args.prom_start.empty() || args.prom_end.empty()) {
    return prism::MakeError(prism::ErrorCode::kInvalidArgument,
                            "--prometheus needs --prom-start and --prom-end");
  }
  if (!s) return std::unexpected(s.error());
  if (!e) return std::unexpected(e.error());
  po.start_ms = *s;
  po.end_ms = *e;
  auto d = prism::counters::ReadPrometheus(po, stats);
  if (!d) return std::unexpected(d.error());
  sources->push_back({args.prometheus, "prometheus", d->rows});
  return std::move(*d);
}

// Polls of the port counters from CSV files (or sFlow captures with --sflow-counters), each named
// as a source; several files are merged (as the deltas they have become once read).
prism::StatusOr<prism::counters::CountersData> ReadCounterFiles(
    const CountersCliArgs& args, prism::counters::CounterKind kind, prism::Stats* stats,
    std::vector<prism::output::CountersSource>* sources) {
  prism::counters::CountersData data;
  prism::counters::CountersBuilder merged(prism::counters::CounterKind::kDelta, nullptr);
  for (const std::string& path : args.inputs) {
    auto d = args.sflow ? prism::counters::ReadSflowCounters(path, stats)
                        : prism::counters::ReadCountersCsv(path, kind, stats);
    if (!d) return std::unexpected(d.error());
    sources->push_back({path, args.sflow ? "sflow-counters" : "counters-csv", d->rows});
    if (args.inputs.size() == 1) {
      data = std::move(*d);
    } else {  // several files: merge the (already delta) polls
      for (const auto& p : d->ports)
        for (size_t i = 0; i < p.ts_ms.size(); ++i)
          merged.Add(p.switch_name, p.port, p.ts_ms[i], p.in_bytes[i], p.out_bytes[i]);
    }
  }
  if (args.inputs.size() > 1) data = merged.Finish();
  return data;
}

prism::Status WriteCountersOutputs(const CountersCliArgs& args,
                                   const prism::output::Report& report) {
  if (!args.report.empty()) {
    PRISM_RETURN_IF_ERROR(
        output_file::WriteOutputFile(args.report, "report", [&](std::ostream* out) {
          return prism::output::WriteReportJson(report, out);
        }));
  }
  if (!args.html.empty()) {
    PRISM_RETURN_IF_ERROR(
        output_file::WriteOutputFile(args.html, "HTML report", [&](std::ostream* out) {
          return prism::output::WriteHtmlReport(report, out);
        }));
  }
  return prism::OkStatus();
}

}  // namespace

int RunCountersAnalyze(const CountersCliArgs& args) {
  using prism::counters::CountersData;
  auto fail = [](const prism::Error& e) {
    fmt::print(stderr, "llmprism analyze: {}\n", e.message);
    return 2;
  };
  const auto t0 = std::chrono::steady_clock::now();
  prism::Stats stats;
  auto kind = prism::counters::ParseCounterKind(args.counter_kind);
  if (!kind) return fail(kind.error());
  prism::counters::PortTopology topo;
  if (!args.topology.empty()) {
    auto t = prism::counters::ReadPortTopologyCsv(args.topology, &stats);
    if (!t) return fail(t.error());
    topo = std::move(*t);
  }
  std::vector<prism::output::CountersSource> sources;
  if (args.sflow && !args.prometheus.empty()) {
    return fail({prism::ErrorCode::kInvalidArgument,
                 "give either --sflow-counters captures or --prometheus, not both"});
  }
  if (args.sflow && args.inputs.empty()) {
    return fail({prism::ErrorCode::kInvalidArgument,
                 "--sflow-counters: no input given (pcap/pcapng captures of sFlow datagrams)"});
  }
  auto read = !args.prometheus.empty() ? ReadFromPrometheus(args, *kind, &stats, &sources)
                                       : ReadCounterFiles(args, *kind, &stats, &sources);
  if (!read) return fail(read.error());
  const CountersData data = std::move(*read);
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  prism::counters::CountersOptions options;
  options.bin_s = args.bin_s;
  options.refresh_s = args.refresh_s;
  options.max_gap_s = args.max_gap_s;
  options.k = args.k;
  options.impact.gpus_per_server = args.gpus_per_server;
  options.impact.warn_gpu_s = args.warn_gpu_s;
  options.impact.critical_gpu_s = args.critical_gpu_s;
  prism::counters::CountersResult result =
      prism::counters::AnalyzeCounters(data, topo, options, &stats);
  prism::output::Report report =
      prism::output::BuildCountersReport(result, data, sources, stats);
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (auto st = WriteCountersOutputs(args, report); !st) return fail(st.error());
  fmt::print("{}", prism::output::FormatSummary(report, isatty(STDOUT_FILENO) == 1));
  fmt::print(stderr, "llmprism analyze: {} polls of {} ports read in {:.2f}s ({:.1f} M polls/s), "
             "analysed in {:.2f}s\n", data.rows, data.ports.size(), read_s,
             read_s > 0 ? data.rows / read_s / 1e6 : 0.0, total_s - read_s);
  std::fflush(stdout);
  if (uint64_t skipped = stats.SkippedTotal(); skipped > 0) {
    fmt::print(stderr, "llmprism analyze: {} input rows were skipped as bad\n", skipped);
    return 1;
  }
  return 0;
}
