#include "diagnosis/finding_kind.h"

#include <array>
#include <cstddef>

namespace prism::diagnosis {
namespace {

// By FindingKind value.
constexpr std::array<std::string_view, 14> kNames = {
    "congested_link",     "degraded_link",   "degraded_switch",    "iteration_rhythm",
    "job_ended",          "job_stall",       "job_started",        "scheduler_mismatch",
    "server_out_of_step", "slow_dp_group",   "slow_iteration",     "slow_step",
    "straggler_gpu",      "telemetry_loss",
};
static_assert(kNames.size() == static_cast<size_t>(FindingKind::kTelemetryLoss) + 1,
              "one name per kind");

constexpr bool NamesAscending() {
  for (size_t i = 1; i < kNames.size(); ++i) {
    if (!(kNames[i - 1] < kNames[i])) return false;
  }
  return true;
}
static_assert(NamesAscending(), "FindingKind must list the kinds in the order of their names");

}  // namespace

const char* FindingKindName(FindingKind kind) {
  return kNames[static_cast<size_t>(kind)].data();  // string literals: NUL-terminated
}

std::optional<FindingKind> ParseFindingKind(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<FindingKind>(i);
  }
  return std::nullopt;
}

}  // namespace prism::diagnosis
