// File: counters/refresh_phase.h
// Counters mode: when each polled value was taken. A switch refreshes a port's counters on its
// own clock (about once a second) and a poll reads the last refresh, so a delta counts the bytes
// between two refresh instants, not between two polls: up to a refresh earlier. For equivalent-
// time folding (counters/phase_fold.h) that blur would be as wide as the detail sought. The
// refresh instants lie on a lattice (phase + k x refresh) that the polls reveal: a poll interval
// shows new bytes exactly when a refresh falls inside it, so over a few hundred polls only a
// narrow range of lattice periods and phases agrees with which deltas are zero. The measured
// refresh (resample.h: the mean interval between non-zero polls) is only an upper bound (one poll
// can read two refreshes' worth), so the period is searched below it. Sits after
// counters/port_counters.h.
#pragma once

#include <cstdint>
#include <vector>

namespace prism::counters {

struct RefreshLattice {
  double refresh_ms = 0;  // 0: none found
  double phase_ms = 0;    // a refresh instant modulo refresh_ms (of the ms timestamps)
  double fit = 0;         // share of poll intervals whose zero / non-zero delta it explains
};

// The lattice best explaining which of the polls at `ts_ms` (those within [from_ms, to_ms]) read
// a new value (`nonzero`): periods from 0.75 x to 1.005 x `refresh_s` (jittered polls read two
// refreshes at once more often, inflating the measured refresh) in steps fine enough that the
// lattice drifts by under 10 ms over the polls, phases in 1/100 of the period. A busy port fits
// ~1; idle stretches lower the fit (an interval with a refresh but no traffic reads 0 too).
RefreshLattice EstimateRefreshLattice(const std::vector<int64_t>& ts_ms,
                                      const std::vector<bool>& nonzero, double refresh_s,
                                      int64_t from_ms, int64_t to_ms);

// The refresh instant a poll at `poll_ms` read: the latest lattice point at or before it.
double ReadInstantMs(const RefreshLattice& lattice, int64_t poll_ms);

}  // namespace prism::counters
