// File: flow/row_runs.h
// The table's passes over its rows on threads: the rows cut into one run per thread, each run's
// work on a thread of its own (the first on the caller's). The analysis hands out pairs and jobs
// (analysis/parallel_for.h); the table's passes are over rows, in runs of about equal size.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace prism::flow {

// Below this many rows per thread, starting threads costs more than the pass they share.
inline constexpr size_t kMinRowsPerThread = size_t{1} << 16;

// How many runs `n` rows are cut into on `threads` threads: 1 when the rows are few.
inline size_t RowRunsFor(size_t n, int threads) {
  return std::clamp<size_t>(n / kMinRowsPerThread, 1, size_t(std::max(1, threads)));
}

// fn(t) for t in [0, runs): run 0 on the caller, the others on threads of their own.
template <typename Fn>
void OnRuns(size_t runs, Fn fn) {
  std::vector<std::jthread> others;
  for (size_t t = 1; t < runs; ++t) others.emplace_back([&fn, t] { fn(t); });
  fn(0);
}

// fn(begin, end, t) over rows [0, n) cut into RowRunsFor(n, threads) runs of about equal size.
template <typename Fn>
void OnRowRuns(size_t n, int threads, Fn fn) {
  const size_t runs = RowRunsFor(n, threads);
  OnRuns(runs, [&](size_t t) { fn(n * t / runs, n * (t + 1) / runs, t); });
}

}  // namespace prism::flow
