// File: diagnosis/finding.h
// One thing that is wrong, with its evidence (docs/design.md, Findings): what, who (GPUs, switches,
// job), when, the metric against its baseline, and the likely cause.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/name_table.h"
#include "diagnosis/finding_kind.h"

namespace prism::diagnosis {

enum class Severity { kInfo, kWarning, kCritical };
enum class Cause { kGpu, kNetwork, kUnknown };

const char* SeverityName(Severity s);
const char* CauseName(Cause c);

struct Finding {
  FindingKind kind = FindingKind::kSlowStep;
  Severity severity = Severity::kInfo;
  int job = -1;                       // index into AnalysisResults::jobs, -1 for none
  std::vector<EndpointId> gpus;
  std::vector<std::string> switches;
  int64_t start_ns = 0, end_ns = 0;
  std::string metric;                 // e.g. "step_duration_s", "relative_bandwidth"
  double value = 0, baseline = 0, sigma = 0;
  int units = 0;                      // steps or time bins the finding persisted over
  Cause cause = Cause::kUnknown;
  std::string summary;                // one line for people
};

}  // namespace prism::diagnosis
