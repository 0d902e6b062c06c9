// File: counters/slow_episodes.h
// Counters mode, from a job's measured iterations to what an operator should hear about them.
// Port counters see an iteration only as well as the counters are refreshed and polled: each
// boundary is blurred over one refresh (or poll) interval, so a duration is uncertain by about
// that much on each end. This stage
//   1. sets the job's resolution limit: the smallest excess over the median step the counters can
//      show (two boundaries' blur, k robust sigma of the normal steps, 15% of the median); an
//      iteration below it stays in the measured series with its uncertainty, never a finding;
//   2. recognises a missed boundary: a long "iteration" that moved n iterations' worth of bytes in
//      about n median steps is n iterations, not a slow one (the bytes are counted exactly, the
//      boundary between bursts is what the counters blur);
//   3. ignores telescoping: a boundary placed late makes one iteration long and the next short by
//      the same amount, so an excess must survive its neighbours;
//   4. finds a rhythm: slow iterations recurring every N iterations (a checkpoint or evaluation
//      every N steps) are the job's cadence, reported once with its period and cost;
//   5. joins the remaining slow iterations into episodes (start, end, count, lost seconds); a run
//      of iterations each a little slow (one uncertainty) counts when the run adds up.
// Severity is then decided by lost GPU time (SeverityOfLoss), not by sigma.
// Sits after counters_analysis.cc's iteration tracking, before its findings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "diagnosis/finding.h"

namespace prism::counters {

struct IterationSample {
  double duration_s = 0;
  double work = 1;   // the iteration's bytes / the median normal iteration's bytes
  bool gap = false;  // overlaps missing data: neither normal nor slow
};

struct ResolutionLimit {
  double boundary_s = 0;     // blur of one boundary: max(refresh, p90 poll interval)
  double uncertainty_s = 0;  // 1-sigma of one measured duration
  double limit_s = 0;        // smallest excess over the median shown as slow
};

// `sigma_s`: robust sigma of the normal durations (already floored by the caller).
ResolutionLimit ComputeResolution(double refresh_s, double poll_p90_s, double median_s,
                                  double sigma_s, double k);

enum class IterationState : uint8_t {
  kNormal,         // within the limit
  kGap,            // overlaps missing data
  kMerged,         // n iterations' bytes in about n steps: a missed boundary
  kSlow,           // excess above the limit, part of an episode
  kRhythm,         // one of the job's regular slow iterations
};

struct SlowEpisode {
  size_t first = 0, last = 0;  // iteration indices, inclusive
  int slow = 0;                // slow iterations in it
  double extra_s = 0;          // time lost over the median steps the span's bytes account for
  double longest_s = 0;        // longest iteration
};

struct IterationRhythm {
  int every = 0;           // N: one slow iteration every N iterations
  double period_s = 0;     // N x median step
  int count = 0;           // occurrences recognised
  size_t first = 0, last = 0;
  double extra_s = 0;      // median excess per occurrence
  double cost_fraction = 0;  // share of the job's time spent in the excess
};

struct EpisodeOptions {
  double k = 3;
  size_t merge_gap = 2;         // normal iterations allowed inside one episode
  size_t min_sustained = 3;     // consecutive iterations over one uncertainty: a slowdown
  int min_rhythm_count = 4;     // occurrences before a cadence is the job's rhythm
  double rhythm_fit = 0.75;     // share of the slow iterations that must sit on the cadence
};

struct EpisodeAnalysis {
  std::vector<IterationState> state;  // per iteration
  std::vector<double> excess_s;       // per iteration: duration - iterations' worth x median
  std::vector<SlowEpisode> episodes;
  std::optional<IterationRhythm> rhythm;
  size_t merged = 0;  // iterations that were missed boundaries
};

EpisodeAnalysis FindSlowEpisodes(const std::vector<IterationSample>& iterations, double median_s,
                                 const ResolutionLimit& limit, const EpisodeOptions& options);

// Lost GPU time -> severity: info below warn_gpu_s, critical from critical_gpu_s.
struct ImpactOptions {
  double gpus_per_server = 8;
  double warn_gpu_s = 600;       // ten GPU-minutes
  double critical_gpu_s = 3600;  // one GPU-hour
};
diagnosis::Severity SeverityOfLoss(double gpu_s, const ImpactOptions& options);

}  // namespace prism::counters
