// File: counters/counters_test_util.h
// Test data for counters mode (tests only): a synthetic cluster of two jobs polled the way real
// switches are, with a stall and a server out of step, for the analysis and report tests.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "counters/port_counters.h"

namespace prism::counters {

// Synthetic cluster: servers of two jobs (period 6 s on 4 servers, 9 s on 5 servers), 2 NICs each,
// polled every ~0.57 s with a 1 s refresh. Job A stalls for 30 s; one server of job B (b2) runs a
// third of a period out of phase for a while (on one NIC only with `shift_one_nic`: what a port's
// own polling artefacts could look like); b3 keeps a constant `role_offset_s` throughout (a
// pipeline stage's usual phase).
inline CountersData MakeTwoJobCluster(PortTopology* topo, bool shift_one_nic = false,
                                      double role_offset_s = 0) {
  struct Server {
    std::string name;
    double period_s, phase_s;
    bool stall;
    bool shifted;
  };
  std::vector<Server> servers;
  for (int i = 0; i < 4; ++i) servers.push_back({fmt::format("a{}", i), 6.0, 0.3, true, false});
  for (int i = 0; i < 5; ++i) servers.push_back({fmt::format("b{}", i), 9.0, 1.7, false, i == 2});
  const double total_s = 900, res_s = 0.01;
  const double stall_from = 300, stall_to = 330, shift_from = 500, shift_to = 650;
  CountersBuilder b(CounterKind::kCumulative, nullptr);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t s = 0; s < servers.size(); ++s) {
    const Server& sv = servers[s];
    for (int nic = 0; nic < 2; ++nic) {
      const std::string sw = fmt::format("leaf{}", nic), port = fmt::format("p{}", s);
      (*topo)[{sw, port}] = {sv.name, "", fmt::format("nic{}", nic)};
      double cum = 0, next_poll = u(rng) * 0.5, refresh_phase = u(rng), snapshot = 0;
      double next_refresh = refresh_phase;
      for (double t = 0; t < total_s; t += res_s) {
        double tt = t;
        if (sv.stall && t >= stall_from) tt = t < stall_to ? -1 : t - (stall_to - stall_from);
        if (sv.shifted && t >= shift_from && t < shift_to && !(shift_one_nic && nic == 1))
          tt += sv.period_s / 3;
        if (sv.name == "b3") tt += role_offset_s;
        double ph = tt < 0 ? -1 : std::fmod(tt + sv.phase_s, sv.period_s);
        double rate = ph >= 0 && ph < 0.4 * sv.period_s ? 20e9 : (ph >= 0 ? 1e9 : 0);  // bytes/s
        cum += rate * res_s;
        if (t >= next_refresh) {
          snapshot = cum;
          next_refresh += 1.0;
        }
        if (t >= next_poll) {
          auto v = static_cast<uint64_t>(snapshot);
          b.Add(sw, port, 1'700'000'000'000 + static_cast<int64_t>(t * 1000), v, v / 2);
          next_poll += 0.47 + 0.2 * u(rng);
        }
      }
    }
  }
  return b.Finish();
}

}  // namespace prism::counters
