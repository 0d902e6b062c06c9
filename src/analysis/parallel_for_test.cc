#include "analysis/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace prism::analysis {
namespace {

// Every index is run exactly once, whatever the chunk and thread counts, including chunks that
// do not divide the items and more threads than chunks.
TEST(ParallelForInChunks, RunsEveryIndexOnce) {
  for (size_t n : {0, 1, 63, 64, 65, 1000}) {
    for (size_t grain : {1, 7, 64, 2000}) {
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(testing::Message() << n << " items, " << grain << " a chunk, " << threads
                                        << " threads");
        std::vector<std::atomic<int>> runs(n);
        ParallelForInChunks(n, threads, grain, [&](size_t i) { ++runs[i]; });
        for (size_t i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
      }
    }
  }
}

}  // namespace
}  // namespace prism::analysis
