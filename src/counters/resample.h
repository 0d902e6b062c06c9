// File: counters/resample.h
// Counters mode: polled deltas -> bytes per fixed time bin, conserving bytes. Real polling is
// irregular (the shared data: ~0.575 s median, p90 0.83 s, gaps of seconds and minutes) and a
// switch refreshes its counters more slowly than it is polled (~1 s), so ~40% of busy polls read a
// stale 0 followed by a double delta. A non-zero delta is therefore spread evenly over
// (max(previous non-zero poll, t - max(refresh, t - previous poll)), t]: a stale zero lends its
// interval to the next delta, a genuinely idle stretch does not. Intervals longer than max_gap are
// still spread (bytes are conserved) but their bins are marked missing, so analysis neither
// reads periodicity nor stalls into them. Sits after counters/port_counters.h, before analysis.
#pragma once

#include <cstdint>
#include <vector>

#include "core/stats.h"
#include "counters/port_counters.h"

namespace prism::counters {

struct Grid {
  int64_t start_ms = 0;
  double bin_s = 0.25;
  size_t bins = 0;
  int64_t BinStartMs(size_t i) const { return start_ms + static_cast<int64_t>(i * bin_s * 1000); }
};

// The refresh period seen in the data: over ports with traffic, the median of the mean interval
// between non-zero polls (one non-zero poll per refresh when polled faster than refreshed, one per
// poll otherwise: so this is max(refresh, poll)). Also the median poll interval.
struct PollProfile {
  double poll_s = 0;     // median poll interval over all ports
  double poll_p90_s = 0;
  double refresh_s = 0;  // as above; poll_s when no port is busy
  double stale_zero_fraction = 0;  // zero polls followed by a non-zero within refresh, busy ports
};
PollProfile ProfilePolls(const CountersData& data);

// Adds the port's in+out deltas (or only one direction) into `bytes` (grid.bins entries) and
// counts, per bin, that this port had data there (`covered`, incremented for bins fully inside
// intervals no longer than max_gap_s). The first poll's delta is dropped (its interval is unknown).
// Returns the bytes spread (in-grid and clipped parts both count; the grid should cover the data).
struct SpreadOptions {
  double refresh_s = 1;
  double max_gap_s = 5;
  bool in = true, out = true;
};
uint64_t SpreadPort(const PortSeries& port, const Grid& grid, const SpreadOptions& options,
                    double* bytes, uint16_t* covered, Stats* stats);

}  // namespace prism::counters
