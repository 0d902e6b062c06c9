// File: analysis/parallel_for.h
// The analysis's one form of parallelism: independent items (pairs, jobs) on a few threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace prism::analysis {

// Runs fn(i) for i in [0, n) on `threads` threads; each index is independent.
template <typename Fn>
void ParallelFor(size_t n, int threads, Fn fn) {
  threads = std::max(1, std::min<int>(threads, static_cast<int>(n)));
  if (threads == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // Indices are handed out one at a time: pairs and jobs differ widely in cost, so a fixed
  // split would leave one thread idle. Each index writes only its own slot (same result).
  std::atomic<size_t> next{0};
  std::vector<std::jthread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
}

}  // namespace prism::analysis
