// File: counters/phase_fold.h
// Counters mode: equivalent-time sampling of a job's iteration. A poll every second cannot show
// what happens within a second of one iteration, but polls are not locked to the iteration: over
// many iterations they land at every phase of it. Each polled delta is then the bytes between two
// phases of the iteration (plus whole iterations), and the per-phase profile that best explains
// all the deltas of a span (non-negative least squares over phase bins) resolves the iteration far
// finer than one poll interval. Used by counters/late_member.h to see which servers moved bytes
// before their collective started. Sits after counters/refresh_phase.h (when each value was read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace prism::counters {

// Time -> iteration phase over consecutive iterations of a job: k + the fraction of iteration k
// elapsed (each iteration stretched between its own boundaries, so a span whose iterations vary a
// little in length still folds onto one profile).
class IterationClock {
 public:
  // `boundaries_ms`: iteration starts and the last one's end, increasing; at least two.
  explicit IterationClock(std::vector<double> boundaries_ms);
  // NaN outside [first boundary, last boundary].
  double PhaseAt(double t_ms) const;
  size_t iterations() const { return boundaries_.size() - 1; }
  double start_ms() const { return boundaries_.front(); }
  double end_ms() const { return boundaries_.back(); }

 private:
  std::vector<double> boundaries_;
};

// Bytes counted between two phases (iteration units, from < to).
struct PhaseDelta {
  double from = 0, to = 0;
  double bytes = 0;
};

// The bytes per phase bin of one iteration (`bins` entries, bin i = phases [i, i+1) / bins) that
// best explain the deltas: each delta is the profile integrated over (from, to] (a whole iteration
// counts the whole profile); non-negative least squares by coordinate descent (bytes are never
// negative, which keeps phases the polls barely cover from oscillating). Empty when there are
// fewer deltas than bins.
std::vector<double> FoldByPhase(const std::vector<PhaseDelta>& deltas, size_t bins);

// The first of the profile's busiest pair of adjacent bins (cyclically): its collective's burst.
size_t BusiestPair(const std::vector<double>& profile);

// The share of a profile's bytes in the `lead_bins` bins ending `margin_bins` before bin `peak`
// (cyclically): what moved before the burst. 0 for an empty or silent profile.
double EarlyShareBefore(const std::vector<double>& profile, size_t peak, size_t lead_bins,
                        size_t margin_bins);
// The same before the profile's own busiest pair.
double EarlyShare(const std::vector<double>& profile, size_t lead_bins, size_t margin_bins);

}  // namespace prism::counters
