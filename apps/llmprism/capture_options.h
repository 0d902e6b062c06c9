// File: apps/llmprism/capture_options.h
// The packet-capture options `analyze` and `serve` share (how packets become flow records:
// ingest/pcap/packet_flow_builder.h), registered once so both commands take the same flags with
// the same defaults, and turned into the input registry's options (pipeline/input_registry.h).
#pragma once

#include <cmath>

#include <CLI/CLI.hpp>

#include "cli_checks.h"
#include "pipeline/input_registry.h"

struct CaptureCliArgs {
  double flowlet_gap_us = 1000;         // TCP/UDP flowlet idle gap
  double roce_idle_timeout_us = 10000;  // RoCE message idle timeout
};

inline void AddCaptureOptions(CLI::App* cmd, CaptureCliArgs* args) {
  cmd->add_option("--flowlet-gap-us", args->flowlet_gap_us,
                  "Captures: idle gap in microseconds that ends a TCP/UDP flowlet")
      ->capture_default_str()
      ->check(cli_checks::kNonNegative);
  cmd->add_option("--roce-idle-us", args->roce_idle_timeout_us,
                  "Captures: idle time in microseconds that closes an unfinished RoCE message")
      ->capture_default_str()
      ->check(cli_checks::kNonNegative);
}

inline prism::pipeline::ReadOptions ToReadOptions(const CaptureCliArgs& args) {
  prism::pipeline::ReadOptions o;
  o.capture.flows.flowlet_gap_ns = std::llround(args.flowlet_gap_us * 1e3);
  o.capture.flows.roce_idle_timeout_ns = std::llround(args.roce_idle_timeout_us * 1e3);
  return o;
}
