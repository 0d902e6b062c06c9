// File: sim/truth.h
// The simulator's ground truth (docs/truth-schema.md): what eval compares a report against.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace prism::sim {

struct TruthStep {
  int64_t start_ns = 0, end_ns = 0;
  int64_t dp_start_ns = 0, dp_end_ns = 0;
};

struct TruthJob {
  std::string id;
  std::vector<std::string> gpus;
  std::vector<std::string> hosts;
  int dp = 1, pp = 1, tp = 1, microbatches = 1;
  std::string schedule;
  bool zero = false;
  std::vector<std::vector<std::string>> stages;
};

struct TruthTimeline {
  std::string gpu;
  std::string job;
  std::vector<TruthStep> steps;
};

struct TruthPair {
  std::string a, b;  // a < b in address order
  std::string job;
  std::string label;  // "dp" | "pp"
};

struct TruthFault {
  std::string id, kind, cause;
  std::vector<std::string> gpus, switches, jobs;
  int64_t start_ns = 0, end_ns = 0;
  double factor = 1;
};

// A link the simulated fabric congested with no fault injected (sim/congestion_log.h).
struct TruthFabricEvent {
  std::string kind = "congested_link";
  std::vector<std::string> switches;  // leaf, spine
  std::string direction;              // "up" (leaf -> spine) or "down"
  int64_t start_ns = 0, end_ns = 0;
  double squeezed_share = 0;
};

struct Truth {
  std::string scenario;
  uint64_t seed = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint64_t records = 0;
  std::vector<TruthJob> jobs;
  std::vector<TruthPair> pairs;
  std::vector<TruthTimeline> timelines;
  std::vector<TruthFault> faults;
  std::vector<TruthFabricEvent> fabric_events;
};

Status WriteTruthJson(const Truth& truth, std::ostream* out);

}  // namespace prism::sim
