#include "analysis/classify/tensor_parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

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
  pairs[0].evidence.rule = "alternating-directions";
  std::vector<DenserThanPipeline> denser;
  EXPECT_EQ(LabelTensorParallelPairs(&pairs, transfers, {}, &denser), 1u);
  EXPECT_EQ(pairs[0].label, PairLabel::kTp);
  EXPECT_EQ(pairs[0].evidence.rule, "denser-than-pipeline");
  EXPECT_EQ(pairs[1].label, PairLabel::kPp);
  ASSERT_EQ(denser.size(), 1u);
  EXPECT_EQ(denser[0].pair, 0u);
  EXPECT_EQ(denser[0].witnesses, std::vector<size_t>{1});
  EXPECT_EQ(denser[0].previous_rule, "alternating-directions");
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

// GPU 0's gradient collective with GPU 3: ten transfers once per 200-ms step.
PairTransfers OncePerStep() {
  PairTransfers dp;
  for (int step = 0; step < 4; ++step)
    for (int x = 0; x < 10; ++x) {
      const int64_t s = step * 200 * kMs + 195 * kMs + x * 100'000;
      dp.transfers.push_back({s, s + 50'000, 1 << 18, 1, x % 2 == 0});
    }
  return dp;
}

// A TP pair already taken for a collective, at a pipeline's end (bursts in half the pipeline's
// intervals: under the 0.6 an interleaved collective needs), with four times the transfers of its
// GPU's gradient collective: TP. The gradient collective stays DP.
TEST(TensorParallel, CollectiveDenserThanItsGpusOtherCollectiveIsTp) {
  std::vector<Pair> pairs{MakePair(0, 1, PairLabel::kDp), MakePair(0, 2, PairLabel::kPp),
                          MakePair(0, 3, PairLabel::kDp)};
  std::vector<PairTransfers> transfers{TensorParallel(), Pipeline(), OncePerStep()};
  TensorParallelOptions options;
  EXPECT_EQ(LabelTensorParallelPairs(&pairs, transfers, options), 0u);  // before step order
  options.denser_than_collective = true;
  EXPECT_EQ(LabelTensorParallelPairs(&pairs, transfers, options), 1u);
  EXPECT_EQ(pairs[0].label, PairLabel::kTp);
  EXPECT_EQ(pairs[0].evidence.rule, "denser-than-collective");
  EXPECT_EQ(pairs[2].label, PairLabel::kDp);
}

// The same pair with no sparser collective beside it (a ring neighbour with as many transfers)
// is not told from DP by density.
TEST(TensorParallel, CollectiveAsDenseAsItsNeighbourStaysDp) {
  std::vector<Pair> pairs{MakePair(0, 1, PairLabel::kDp), MakePair(0, 2, PairLabel::kPp),
                          MakePair(0, 3, PairLabel::kDp)};
  std::vector<PairTransfers> transfers{TensorParallel(), Pipeline(), TensorParallel()};
  TensorParallelOptions options;
  options.denser_than_collective = true;
  EXPECT_EQ(LabelTensorParallelPairs(&pairs, transfers, options), 0u);
  EXPECT_EQ(pairs[0].label, PairLabel::kDp);
  EXPECT_EQ(pairs[2].label, PairLabel::kDp);
}

// Denser only than pairs the step-order pass found to be DP: a pipeline pair after all.
TEST(TensorParallel, DenserPairsNeedAWitnessThatStaysAPipelinePair) {
  std::vector<Pair> pairs{MakePair(0, 1, PairLabel::kTp), MakePair(1, 2, PairLabel::kDp),
                          MakePair(0, 3, PairLabel::kTp), MakePair(3, 4, PairLabel::kPp)};
  std::vector<DenserThanPipeline> denser{{0, {1}, "alternating-directions"},
                                         {2, {1, 3}, "alternating-directions"}};
  EXPECT_EQ(RevertUnwitnessedDenserPairs(&pairs, denser), 1u);
  EXPECT_EQ(pairs[0].label, PairLabel::kPp);
  EXPECT_EQ(pairs[0].evidence.rule, "alternating-directions");
  EXPECT_EQ(pairs[2].label, PairLabel::kTp);  // pair 3 is still a pipeline pair
}

// The share by its definition: an interval between consecutive pipeline starts counts when a
// collective start lies strictly inside it.
double InterleavedShareByDefinition(const std::vector<Transfer>& collective,
                                    const std::vector<Transfer>& pipeline) {
  if (pipeline.size() < 2) return 0;
  size_t with = 0;
  for (size_t i = 0; i + 1 < pipeline.size(); ++i)
    with += std::any_of(collective.begin(), collective.end(), [&](const Transfer& c) {
      return pipeline[i].start_ns < c.start_ns && c.start_ns < pipeline[i + 1].start_ns;
    });
  return double(with) / double(pipeline.size() - 1);
}

// Starts in order, drawn from few values so that ties (equal starts, a collective start on an
// interval's end) are common.
std::vector<Transfer> RandomStarts(std::mt19937& rng, size_t n, int64_t values) {
  std::uniform_int_distribution<int64_t> at(0, values - 1);
  std::vector<Transfer> out(n);
  for (Transfer& t : out) t.start_ns = at(rng);
  std::sort(out.begin(), out.end(),
            [](const Transfer& a, const Transfer& b) { return a.start_ns < b.start_ns; });
  return out;
}

// Both ways of counting (walking the intervals when collective starts are many, looking each
// start's interval up when they are few) agree with the definition, ties included.
TEST(TensorParallel, InterleavedShareMatchesItsDefinition) {
  std::mt19937 rng(7);
  for (int round = 0; round < 400; ++round) {
    const size_t pipeline_size = size_t(rng() % 200), collective_size = size_t(rng() % 60);
    const int64_t values = 1 + int64_t(rng() % 300);
    const auto pipeline = RandomStarts(rng, pipeline_size, values);
    const auto collective = RandomStarts(rng, collective_size, values);
    SCOPED_TRACE(::testing::Message() << "round " << round << ": " << collective_size << " in "
                                      << pipeline_size << " over " << values);
    EXPECT_EQ(InterleavedShare(collective, pipeline),
              InterleavedShareByDefinition(collective, pipeline));
  }
}

// Pairs are judged on threads, each by the labels as they were, and relabelled in pair order: the
// same labels, rules and denser pairs (with their witnesses, in pair order) on any thread count.
// Many GPUs, each with a pipeline pair and a dense pair interleaved with it (TP), a pipeline pair
// as dense as its neighbour stage's (stays) or a once-per-step collective (stays), so that the
// pairs relabelled lie in every chunk the threads take and at every place in it.
TEST(TensorParallel, SameLabelsOnAnyThreadCount) {
  std::vector<Pair> pairs;
  std::vector<PairTransfers> transfers;
  for (EndpointId gpu = 0; gpu < 120; ++gpu) {
    const EndpointId base = 1000 + 3 * gpu;
    if (gpu % 2 == 1) {  // the pipeline pair first: pairs of every kind at every position
      pairs.push_back(MakePair(gpu, base + 1, PairLabel::kPp));
      transfers.push_back(Pipeline());
    }
    switch (gpu % 3) {
      case 0:
        pairs.push_back(MakePair(gpu, base, PairLabel::kPp));
        transfers.push_back(TensorParallel());
        break;
      case 1:
        pairs.push_back(MakePair(gpu, base, PairLabel::kPp));
        transfers.push_back(Pipeline(5 * kMs));
        break;
      default:
        pairs.push_back(MakePair(gpu, base, PairLabel::kDp));
        transfers.push_back(OncePerStep());
    }
    pairs.back().evidence.rule = gpu % 4 == 0 ? "alternating-directions" : "first-pass";
    if (gpu % 2 == 0) {
      pairs.push_back(MakePair(gpu, base + 1, PairLabel::kPp));
      transfers.push_back(Pipeline());
    }
  }
  std::vector<Pair> one = pairs;
  std::vector<DenserThanPipeline> denser_one;
  const size_t labelled = LabelTensorParallelPairs(&one, transfers, {}, &denser_one, 1);
  EXPECT_EQ(labelled, 40u);
  ASSERT_EQ(denser_one.size(), 40u);
  for (int threads : {2, 3, 5}) {
    SCOPED_TRACE(threads);
    std::vector<Pair> many = pairs;
    std::vector<DenserThanPipeline> denser;
    EXPECT_EQ(LabelTensorParallelPairs(&many, transfers, {}, &denser, threads), labelled);
    for (size_t i = 0; i < many.size(); ++i) {
      EXPECT_EQ(many[i].label, one[i].label) << i;
      EXPECT_EQ(many[i].evidence.rule, one[i].evidence.rule) << i;
    }
    ASSERT_EQ(denser.size(), denser_one.size());
    for (size_t k = 0; k < denser.size(); ++k) {
      EXPECT_EQ(denser[k].pair, denser_one[k].pair);
      EXPECT_EQ(denser[k].witnesses, denser_one[k].witnesses);
      EXPECT_EQ(denser[k].previous_rule, denser_one[k].previous_rule);
    }
  }
}

}  // namespace
}  // namespace prism::analysis
