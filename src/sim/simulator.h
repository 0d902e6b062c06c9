// File: sim/simulator.h
// Runs a SimConfig: advances every job a step at a time in global time order (so jobs that share
// links slow each other), adds storage traffic, and streams flow records to a FlowSink while
// collecting the ground truth.
#pragma once

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/status.h"
#include "sim/cluster.h"
#include "sim/sim_config.h"
#include "sim/truth.h"

namespace prism::sim {

StatusOr<Truth> Simulate(const SimConfig& config, const Cluster& cluster, FlowSink* out,
                         PointTable* points);

}  // namespace prism::sim
