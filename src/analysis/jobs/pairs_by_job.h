// File: analysis/jobs/pairs_by_job.h
// Each job's pairs, listed once. The per-job stages (TP degree, layout, timelines) read only their
// job's pairs; each scanning every pair of the window instead cost jobs x pairs, which grows with
// the square of the cluster (100 jobs at 100,000 GPUs: 100 scans of 1.4 M pairs per stage).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/analysis_results.h"

namespace prism::analysis {

// Indices into a window's pairs, in their order.
using PairIndices = std::span<const uint32_t>;

// Per job, the indices of its pairs in `pairs` in their order (pairs of no job are left out).
// A pair's job is set when it is classified and never changes after, so the lists stay valid
// while labels are refined.
inline std::vector<std::vector<uint32_t>> PairsByJob(const std::vector<Pair>& pairs, size_t jobs) {
  std::vector<std::vector<uint32_t>> of_job(jobs);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const int job = pairs[i].job;
    if (job >= 0 && static_cast<size_t>(job) < jobs) of_job[size_t(job)].push_back(uint32_t(i));
  }
  return of_job;
}

}  // namespace prism::analysis
