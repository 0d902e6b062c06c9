// File: counters/late_servers.h
// Counters mode, stage 5c: names the servers a slow episode waited for. For each episode of slow
// iterations (not a stall) long enough to fold, every member's polls are turned into phase deltas
// (counters/refresh_phase.h: when each value was read; counters/phase_fold.h: the job's
// iterations as the clock), over the episode and over as many normal iterations next to it, and
// counters/late_member.h decides who arrived last at the job's collectives. One
// server_out_of_step finding per episode names them, with the episode's severity.
// Sits after counters_analysis.cc's slow episodes.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "counters/counters_analysis.h"
#include "counters/port_counters.h"

namespace prism::counters {

// A server's ports, each with its NIC name.
using ServerPortsFn = std::function<std::vector<std::pair<const PortSeries*, std::string>>(
    const std::string& server)>;

struct LateServerContext {
  double refresh_s = 1;  // measured (max of refresh and poll interval)
  double max_gap_s = 5;  // longer poll intervals are not folded
  double step_median_s = 0;
  size_t min_iterations = 8;  // episodes shorter than this are not folded
};

void FindLateServers(const CountersJob& job, int ji, const std::vector<ServerResult>& servers,
                     const std::vector<bool>& flagged, const LateServerContext& context,
                     const ServerPortsFn& server_ports, std::vector<CountersFinding>* findings);

}  // namespace prism::counters
