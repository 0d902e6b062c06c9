// File: analysis/parallel_for.h
// The analysis's one form of parallelism: independent items (pairs, jobs) on a few threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace prism::analysis {

// Runs fn(i) for i in [0, n) on `threads` threads, handing the indices out `grain` at a time;
// each index is independent. A grain above 1 is for passes over many items of which most cost
// next to nothing (pairs a pass skips by label): taken one by one, every item moves the shared
// counter's cache line between the cores, which then costs more than the item.
template <typename Fn>
void ParallelForInChunks(size_t n, int threads, size_t grain, Fn fn) {
  grain = std::max<size_t>(1, grain);
  threads = std::max(1, std::min<int>(threads, static_cast<int>((n + grain - 1) / grain)));
  if (threads == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // Chunks are handed out one at a time: items differ widely in cost, so a fixed split would
  // leave one thread idle. Each index writes only its own slot (same result).
  std::atomic<size_t> next{0};
  std::vector<std::jthread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t begin = next.fetch_add(grain); begin < n; begin = next.fetch_add(grain))
        for (size_t i = begin; i < std::min(n, begin + grain); ++i) fn(i);
    });
}

// The grain for a pass over every pair that skips most of them (a few hundred chunks at 20,000
// pairs: still balanced when a few pairs cost far more than the rest).
inline constexpr size_t kPairsPerChunk = 64;

// Runs fn(i) for i in [0, n) on `threads` threads, one index at a time (pairs and jobs whose
// cost differs widely); each index is independent.
template <typename Fn>
void ParallelFor(size_t n, int threads, Fn fn) {
  ParallelForInChunks(n, threads, 1, fn);
}

}  // namespace prism::analysis
