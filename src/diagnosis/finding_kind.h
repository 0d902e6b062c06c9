// File: diagnosis/finding_kind.h
// What a finding says is wrong (or, for the service's job findings, what happened), as a type:
// every kind the product raises, from the diagnosis rules, counters mode, the service and
// --jobs-map. FindingKindName / ParseFindingKind are the one mapping to and from the names that
// reports, the API, the database, /metrics and alerts carry ("straggler_gpu", ...); those names
// are part of the interfaces and never change.
#pragma once

#include <optional>
#include <string_view>

namespace prism::diagnosis {

// In the alphabetical order of the names (checked at compile time in finding_kind.cc): ordering
// findings by kind orders them by name, as the reports always have.
enum class FindingKind {
  kCongestedLink,      // congested_link: a fabric link slow for the DP traffic over it
  kDegradedLink,       // degraded_link: a GPU's access link
  kDegradedSwitch,     // degraded_switch
  kIterationRhythm,    // iteration_rhythm (counters): slow iterations on a cadence
  kJobEnded,           // job_ended (service)
  kJobStall,           // job_stall (counters)
  kJobStarted,         // job_started (service)
  kSchedulerMismatch,  // scheduler_mismatch (--jobs-map)
  kServerOutOfStep,    // server_out_of_step (counters)
  kSlowDpGroup,        // slow_dp_group
  kSlowIteration,      // slow_iteration (counters)
  kSlowStep,           // slow_step
  kStragglerGpu,       // straggler_gpu
  kTelemetryLoss,      // telemetry_loss (service): records lost before analysis
};

const char* FindingKindName(FindingKind kind);
// The kind a name stands for; nullopt for a name no kind has.
std::optional<FindingKind> ParseFindingKind(std::string_view name);

// The service's own findings: a job appeared or resumed, or ended. They are events, not faults:
// never merged across windows, never alerted on.
inline bool IsJobEvent(FindingKind kind) {
  return kind == FindingKind::kJobStarted || kind == FindingKind::kJobEnded;
}

}  // namespace prism::diagnosis
