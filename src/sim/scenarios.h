// File: sim/scenarios.h
// The named scenarios of `llmprism simulate --scenario NAME` (`--list` prints them).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/sim_config.h"

namespace prism::sim {

struct ScenarioInfo {
  std::string name;
  std::string description;
};

std::vector<ScenarioInfo> ListScenarios();
StatusOr<SimConfig> MakeScenario(const std::string& name, uint64_t seed);

}  // namespace prism::sim
