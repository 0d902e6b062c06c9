// File: apps/llmprism/counters_cmd.h
// The counters path of `llmprism analyze` (docs/counters.md): taken when the inputs are port
// counters CSVs (detected by header), --prometheus is given, or --sflow-counters (the inputs are
// captures of sFlow datagrams whose counter samples are read). analyze_cmd.cc registers the
// options (AddCountersOptions) and dispatches (RunCountersAnalyze).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

struct CountersCliArgs {
  std::vector<std::string> inputs;
  std::string topology;  // port topology CSV (switch,port,server[,nic_ip,nic])
  std::string report;
  std::string html;  // --html page (output/html_report.h)
  double k = 3;
  std::string counter_kind = "auto";
  bool sflow = false;  // --sflow-counters: inputs are sFlow captures (counters/sflow_counters.h)
  double bin_s = 0, refresh_s = 0, max_gap_s = 5;
  double gpus_per_server = 8, warn_gpu_s = 600, critical_gpu_s = 3600;
  std::string prometheus;
  std::string prom_in_metric = "ifHCInOctets", prom_out_metric = "ifHCOutOctets";
  std::string prom_switch_label = "instance", prom_port_label = "ifName";
  std::string prom_matchers, prom_start, prom_end;
};

// Registers the counters-only options on `cmd` (shared ones — inputs, --topology, --report, --k —
// are copied in by the caller).
void AddCountersOptions(CLI::App* cmd, CountersCliArgs* args);

// Exit code: 0 ok, 1 rows skipped as bad, 2 unusable input or arguments.
int RunCountersAnalyze(const CountersCliArgs& args);
