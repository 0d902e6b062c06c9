// File: eval/eval_input.h
// Typed views of truth.json and report.json (docs/truth-schema.md, docs/report-schema.md), holding
// only the keys eval scores. Parsing checks every key it reads and reports the first problem as
// "<file>: <json path>: missing key '<key>'" or "... expected <type>, got <type>". Used by eval.cc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace prism::eval {

struct InLayout {
  int64_t dp = 0;
  int64_t pp = 0;
  int64_t tp = 0;
  std::vector<std::vector<std::string>> stages;  // stage 0 first
};

struct InJob {
  std::string id;
  std::vector<std::string> gpus;
  InLayout layout;
};

struct InPair {
  std::string a;
  std::string b;
  std::string job;
  std::string label;
};

struct InStep {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct InTimeline {
  std::string gpu;
  std::string job;  // empty in reports that omit it
  std::vector<InStep> steps;
};

struct InFault {
  std::string id;
  std::string kind;
  std::string cause;
  std::vector<std::string> gpus;
  std::vector<std::string> switches;
  std::vector<std::string> jobs;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// Congestion the simulated fabric made with no fault injected (sim/congestion_log.h).
struct InFabricEvent {
  std::string kind;
  std::vector<std::string> switches;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct InFinding {
  std::string kind;
  std::string severity;
  std::string job;  // optional in the report: empty if absent
  std::vector<std::string> gpus;
  std::vector<std::string> switches;
  std::string cause;  // optional: empty if absent
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct TruthDoc {
  std::vector<InJob> jobs;
  std::vector<InPair> pairs;
  std::vector<InTimeline> timelines;
  std::vector<InFault> faults;
  std::vector<InFabricEvent> fabric_events;  // absent in older truths and in the corpus: none
};

struct ReportDoc {
  std::vector<InJob> jobs;
  std::vector<InPair> pairs;
  std::vector<InTimeline> timelines;
  std::vector<InFinding> findings;
};

// `name` is the file name (or "truth"/"report") used in error messages.
StatusOr<TruthDoc> ParseTruth(const nlohmann::json& doc, std::string_view name);
StatusOr<ReportDoc> ParseReport(const nlohmann::json& doc, std::string_view name);

}  // namespace prism::eval
