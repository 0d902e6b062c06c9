#include "analysis/classify/tensor_parallel.h"

#include <gtest/gtest.h>

namespace prism::analysis {
namespace {

constexpr int64_t kMs = 1'000'000;

Pair MakePair(EndpointId a, EndpointId b, PairLabel label) {
  Pair p;
  p.a = a;
  p.b = b;
  p.job = 0;
  p.label = label;
  p.evidence.bidirectional = true;
  return p;
}

// A pipeline pair of GPU 0: one activation out and one gradient back per micro-batch, 10 ms
// apart, over 40 micro-batches.
PairTransfers Pipeline(int64_t offset_ns = 0) {
  PairTransfers t;
  for (int m = 0; m < 80; ++m)
    t.transfers.push_back({offset_ns + m * 10 * kMs, offset_ns + m * 10 * kMs + kMs, 1 << 20, 1,
                           m % 2 == 0});
  return t;
}

// GPU 0's two-GPU TP group, alternating halves: four exchanges in every other interval of the
// pipeline pair (in the others, the GPU waits for its neighbour stage and computes nothing).
PairTransfers TensorParallel() {
  PairTransfers t;
  for (int m = 0; m < 80; m += 2)
    for (int x = 0; x < 4; ++x) {
      const int64_t s = m * 10 * kMs + 2 * kMs + x * 2 * kMs;
      t.transfers.push_back({s, s + kMs / 2, 1 << 18, 1, x % 2 == 0});
    }
  return t;
}

TEST(TensorParallel, DenseAlternatingPairInterleavedWithThePipelineIsTp) {
  std::vector<Pair> pairs{MakePair(0, 1, PairLabel::kPp), MakePair(0, 2, PairLabel::kPp)};
  std::vector<PairTransfers> transfers{TensorParallel(), Pipeline()};
  EXPECT_EQ(LabelTensorParallelPairs(&pairs, transfers, {}), 1u);
  EXPECT_EQ(pairs[0].label, PairLabel::kTp);
  EXPECT_EQ(pairs[0].evidence.rule, "denser-than-pipeline");
  EXPECT_EQ(pairs[1].label, PairLabel::kPp);
}

// A middle stage alternates between its two neighbours: interleaved, but as many transfers each.
TEST(TensorParallel, MiddleStageOfADeepPipelineStaysPp) {
  std::vector<Pair> pairs{MakePair(0, 1, PairLabel::kPp), MakePair(0, 2, PairLabel::kPp)};
  std::vector<PairTransfers> transfers{Pipeline(5 * kMs), Pipeline()};
  EXPECT_EQ(LabelTensorParallelPairs(&pairs, transfers, {}), 0u);
  EXPECT_EQ(pairs[0].label, PairLabel::kPp);
  EXPECT_EQ(pairs[1].label, PairLabel::kPp);
}

// The gradient collective runs once per step: it falls into one interval of many.
TEST(TensorParallel, OncePerStepCollectiveStaysDp) {
  PairTransfers dp;
  for (int step = 0; step < 4; ++step)
    for (int x = 0; x < 40; ++x) {
      const int64_t s = step * 200 * kMs + 195 * kMs + x * 100'000;
      dp.transfers.push_back({s, s + 50'000, 1 << 18, 1, x % 2 == 0});
    }
  std::vector<Pair> pairs{MakePair(0, 1, PairLabel::kDp), MakePair(0, 2, PairLabel::kPp)};
  std::vector<PairTransfers> transfers{dp, Pipeline()};
  EXPECT_EQ(LabelTensorParallelPairs(&pairs, transfers, {}), 0u);
  EXPECT_EQ(pairs[0].label, PairLabel::kDp);
}

}  // namespace
}  // namespace prism::analysis
