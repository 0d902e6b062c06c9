#include "analysis/classify/pair_classifier.h"

#include <gtest/gtest.h>

#include <thread>

#include "testing/flow_builder.h"

namespace prism::analysis {
namespace {

using prism::testing::FlowBuilder;
constexpr int64_t kMs = 1'000'000;
const char* kA = "10.0.0.1";
const char* kB = "10.0.1.1";

struct Case {
  flow::FlowTable table;
  Pair Classify() {
    table.SortByStart();
    std::vector<int> job_of(table.endpoints().size(), 0);
    PairClassifierOptions o;
    PairsTransfers built = BuildAllTransfers(table, job_of, o.transfers);
    EXPECT_EQ(built.pairs.size(), 1u);
    return ClassifyPair(built.pairs[0], built.transfers[0], o);
  }
};

// A pipeline pair: M activations a->b then M gradients b->a per step, each on two QPs, each
// preceded by a 64-byte clear-to-send in the other direction.
void AddPipelineSteps(flow::FlowTable* t, int steps, int micro, bool with_cts) {
  for (int k = 0; k < steps; ++k) {
    const int64_t step0 = k * 1500 * kMs;
    for (int m = 0; m < micro; ++m) {
      const int64_t f = step0 + m * 30 * kMs, b = step0 + 400 * kMs + m * 60 * kMs;
      for (int q = 0; q < 2; ++q) {
        FlowBuilder(kA, kB).At(f, 300'000).Bytes(4 << 20).Qp(10 + q).Into(t);
        FlowBuilder(kB, kA).At(b, 300'000).Bytes(4 << 20).Qp(20 + q).Into(t);
      }
      if (with_cts) {
        FlowBuilder(kB, kA).At(f - 2'000).Bytes(64).Qp(30).Into(t);
        FlowBuilder(kA, kB).At(b - 2'000).Bytes(64).Qp(31).Into(t);
      }
    }
  }
}

TEST(PairClassifier, PipelinePairWithControlWritesIsPp) {
  Case c;
  AddPipelineSteps(&c.table, 20, 8, /*with_cts=*/true);
  Pair p = c.Classify();
  EXPECT_EQ(p.label, PairLabel::kPp);
  EXPECT_EQ(p.evidence.sizes_mode, 1u);
  EXPECT_GT(p.evidence.control_records, 0u);
  EXPECT_TRUE(p.evidence.bidirectional);
  EXPECT_GT(p.evidence.lead_a, 0);  // activations a -> b lead the gradients
}

TEST(PairClassifier, PartialTransferAtTheWindowEdgeDoesNotMakeItDp) {
  Case c;
  AddPipelineSteps(&c.table, 20, 8, false);
  // The first transfer lost one of its two QP records to the window edge.
  FlowBuilder(kA, kB).At(-10 * kMs, 300'000).Bytes(4 << 20).Qp(11).Into(&c.table);
  EXPECT_EQ(c.Classify().label, PairLabel::kPp);
}

// A ring edge: every step, four buckets of different sizes, two channels each, one way. The
// buckets follow each other within a millisecond: one burst, one transfer per step.
TEST(PairClassifier, RingEdgeWithSeveralBucketSizesIsDp) {
  Case c;
  const uint64_t sizes[] = {300 << 20, 250 << 20, 200 << 20, 80 << 20};
  for (int k = 0; k < 20; ++k) {
    int64_t t = k * 1500 * kMs + 1200 * kMs;
    for (uint64_t s : sizes) {
      for (int ch = 0; ch < 2; ++ch) FlowBuilder(kA, kB).At(t + ch * 1000, 20 * kMs).Bytes(s / 2).Qp(40 + ch).Into(&c.table);
      t += 20 * kMs + 5'000;
    }
  }
  Pair p = c.Classify();
  EXPECT_EQ(p.label, PairLabel::kDp);
  EXPECT_EQ(p.evidence.rule, "one-way-data");
  EXPECT_EQ(p.evidence.transfers, 20u);
  EXPECT_EQ(p.evidence.steps, 20u);
  EXPECT_FALSE(p.evidence.bidirectional);
}

TEST(PairClassifier, UniformBucketsOneWayAreDp) {
  // ZeRO: uniform reduce-scatter buckets, one way: one size per step, which the distinct-size
  // rule alone would read as a pipeline.
  Case c;
  for (int k = 0; k < 20; ++k)
    for (int b = 0; b < 8; ++b)
      FlowBuilder(kA, kB).At(k * 1500 * kMs + b * 10 * kMs, 5 * kMs).Bytes(64 << 20).Into(&c.table);
  Pair p = c.Classify();
  EXPECT_EQ(p.label, PairLabel::kDp);
  EXPECT_EQ(p.evidence.sizes_mode, 1u);
  EXPECT_EQ(p.evidence.rule, "one-way-data");
}

// A ring of two: each step, the same bytes both ways at the same moments (four chunks each way,
// a reduce-scatter and an all-gather round apiece), one size per step: what the distinct-size
// rule took for a pipeline pair.
TEST(PairClassifier, TwoRankAllReduceIsDp) {
  Case c;
  for (int k = 0; k < 20; ++k) {
    const int64_t t = k * 500 * kMs + 400 * kMs;
    for (int chunk = 0; chunk < 4; ++chunk) {
      const int64_t at = t + chunk * 3 * kMs;
      FlowBuilder(kA, kB).At(at + 20'000, 2 * kMs).Bytes(256 << 10).Into(&c.table);
      FlowBuilder(kB, kA).At(at, 2 * kMs).Bytes(256 << 10).Into(&c.table);
    }
  }
  Pair p = c.Classify();
  EXPECT_EQ(p.label, PairLabel::kDp);
  EXPECT_EQ(p.evidence.rule, "aligned-directions");
  EXPECT_GT(p.evidence.aligned_starts, 0.99);
}

// The same all-reduce whose records an exporter cut into 1-ms pieces, and one sampled 1-in-10:
// the same bursts, the same label.
TEST(PairClassifier, TwoRankAllReduceCutIntoPiecesIsStillDp) {
  Case c;
  for (int k = 0; k < 20; ++k) {
    const int64_t t = k * 500 * kMs + 400 * kMs;
    for (int piece = 0; piece < 12; ++piece) {
      FlowBuilder(kA, kB).At(t + 30'000 + piece * kMs, kMs - 1'000).Bytes(90 << 10).Into(&c.table);
      FlowBuilder(kB, kA).At(t + piece * kMs, kMs - 1'000).Bytes(90 << 10).Into(&c.table);
    }
  }
  Pair p = c.Classify();
  EXPECT_EQ(p.label, PairLabel::kDp);
  EXPECT_EQ(p.evidence.transfers, 40u);  // one burst each way per step
}

// A two-rank all-reduce over TCP on loaded hosts: the directions' chunks leave milliseconds apart
// (not together within 1 ms), the rank that leads changes from step to step and also sends last.
// Data both ways every step, no step opening with one direction and closing with the other: a
// collective, told by order, not by alignment.
TEST(PairClassifier, TwoRankAllReduceWithSkewedDirectionsIsDp) {
  Case c;
  for (int k = 0; k < 20; ++k) {
    const int64_t t = k * 500 * kMs + 400 * kMs;
    const char* lead = k % 2 == 0 ? kA : kB;
    const char* other = k % 2 == 0 ? kB : kA;
    for (int chunk = 0; chunk < 2; ++chunk) {
      FlowBuilder(lead, other).At(t + chunk * 10 * kMs, 2 * kMs).Bytes(512 << 10).Into(&c.table);
      FlowBuilder(other, lead).At(t + chunk * 10 * kMs + 4 * kMs, 2 * kMs).Bytes(512 << 10).Into(&c.table);
    }
    FlowBuilder(lead, other).At(t + 20 * kMs, 2 * kMs).Bytes(512 << 10).Into(&c.table);
  }
  Pair p = c.Classify();
  EXPECT_EQ(p.label, PairLabel::kDp);
  EXPECT_EQ(p.evidence.rule, "unordered-directions");
  EXPECT_LT(p.evidence.aligned_starts, 0.9);
  EXPECT_EQ(p.evidence.both_way_steps, 20u);
  EXPECT_EQ(p.evidence.ordered_steps, 0u);
}

// The same collective seen for 6 steps only (a window holding the end of a job whose steps last
// seconds): still a collective.
TEST(PairClassifier, TwoRankAllReduceInFewStepsIsDp) {
  Case c;
  for (int k = 0; k < 6; ++k) {
    const int64_t t = k * 2000 * kMs + 1500 * kMs;
    const char* lead = k % 2 == 0 ? kA : kB;
    const char* other = k % 2 == 0 ? kB : kA;
    for (int chunk = 0; chunk < 2; ++chunk) {
      FlowBuilder(lead, other).At(t + chunk * 10 * kMs, 2 * kMs).Bytes(512 << 10).Into(&c.table);
      FlowBuilder(other, lead).At(t + chunk * 10 * kMs + 4 * kMs, 2 * kMs).Bytes(512 << 10).Into(&c.table);
    }
    FlowBuilder(lead, other).At(t + 20 * kMs, 2 * kMs).Bytes(512 << 10).Into(&c.table);
  }
  Pair p = c.Classify();
  EXPECT_EQ(p.label, PairLabel::kDp);
  EXPECT_EQ(p.evidence.rule, "unordered-directions");
  EXPECT_EQ(p.evidence.both_way_steps, 6u);
}

// A two-rank all-reduce under packet sampling: 8 of its 20 steps open with one direction alone and
// close with the other alone (more than max_unordered_share), but as many one way round as the
// other: a collective ordered by chance. The same steps ordered always one way round are not.
Pair ClassifyPartlyOrdered(bool alternate_direction) {
  Case c;
  for (int k = 0; k < 20; ++k) {
    const int64_t t = k * 500 * kMs + 400 * kMs;
    const bool a_leads = alternate_direction ? k % 2 == 0 : true;
    const char* lead = a_leads ? kA : kB;
    const char* other = a_leads ? kB : kA;
    const bool ordered = k % 5 < 2;
    for (int chunk = 0; chunk < 2; ++chunk) {
      FlowBuilder(lead, other).At(t + chunk * 10 * kMs, 2 * kMs).Bytes(512 << 10).Into(&c.table);
      FlowBuilder(other, lead).At(t + chunk * 10 * kMs + 4 * kMs, 2 * kMs).Bytes(512 << 10).Into(&c.table);
    }
    FlowBuilder(ordered ? other : lead, ordered ? lead : other)
        .At(t + 20 * kMs, 2 * kMs).Bytes(512 << 10).Into(&c.table);
  }
  return c.Classify();
}

TEST(PairClassifier, CollectiveOrderedByChanceBothWaysIsDp) {
  Pair p = ClassifyPartlyOrdered(/*alternate_direction=*/true);
  EXPECT_EQ(p.evidence.both_way_steps, 20u);
  EXPECT_EQ(p.evidence.ordered_steps, 8u);
  EXPECT_EQ(p.label, PairLabel::kDp);
  EXPECT_EQ(p.evidence.rule, "unordered-directions");
}

TEST(PairClassifier, PairOrderedOneWayRoundIsNotMadeDp) {
  Pair p = ClassifyPartlyOrdered(/*alternate_direction=*/false);
  EXPECT_EQ(p.evidence.ordered_steps, 8u);
  EXPECT_EQ(p.label, PairLabel::kPp);
}

// A pipeline pair in 1F1B whose steady-state activations and gradients leave together (stages in
// lockstep, or batched send/recv): the step still opens with forwards alone and closes with
// backwards alone.
TEST(PairClassifier, LockstepPipelineIsPp) {
  Case c;
  for (int k = 0; k < 20; ++k) {
    const int64_t step0 = k * 1000 * kMs;
    // Warm-up: two forwards; steady: six beats of forward + backward together; cool-down: two
    // backwards.
    int64_t t = step0;
    for (int m = 0; m < 2; ++m, t += 20 * kMs) FlowBuilder(kA, kB).At(t, kMs).Bytes(8 << 20).Into(&c.table);
    t += 40 * kMs;
    for (int m = 0; m < 6; ++m, t += 60 * kMs) {
      FlowBuilder(kA, kB).At(t, kMs).Bytes(8 << 20).Into(&c.table);
      FlowBuilder(kB, kA).At(t + 10'000, kMs).Bytes(8 << 20).Into(&c.table);
    }
    for (int m = 0; m < 2; ++m, t += 40 * kMs) FlowBuilder(kB, kA).At(t, kMs).Bytes(8 << 20).Into(&c.table);
  }
  Pair p = c.Classify();
  EXPECT_EQ(p.label, PairLabel::kPp);
  EXPECT_LT(p.evidence.aligned_starts, 0.9);
}

TEST(PairClassifier, TransitivityRelabelsOnlyUnbalancedPairs) {
  // Ring a-b-c-a labelled DP on two edges; the third, one-way-heavy but labelled PP, joins.
  Pair ab{0, 1, 0, PairLabel::kDp, {}}, bc{1, 2, 0, PairLabel::kDp, {}};
  Pair ca{0, 2, 0, PairLabel::kPp, {}};
  ca.evidence.bidirectional = true;
  ca.evidence.bytes_from_a = 10;
  ca.evidence.bytes_from_b = 1000;
  Pair pipeline{0, 3, 0, PairLabel::kPp, {}};
  pipeline.evidence.bidirectional = true;
  pipeline.evidence.bytes_from_a = pipeline.evidence.bytes_from_b = 500;
  Pair dp_to_3{2, 3, 0, PairLabel::kDp, {}};  // a wrong DP label puts 3 in the ring's component
  std::vector<Pair> pairs{ab, bc, ca, pipeline, dp_to_3};
  RefinePairs(&pairs, 4);
  EXPECT_EQ(pairs[2].label, PairLabel::kDp);
  EXPECT_EQ(pairs[2].evidence.rule, "dp-transitive");
  EXPECT_EQ(pairs[3].label, PairLabel::kPp);  // balanced: stays a pipeline pair
}

TEST(PairClassifier, SporadicPairsAreLeftUnlabelled) {
  // A ring of four with ~60 steps per edge, and the setup broadcast's two pairs with 3 steps.
  std::vector<Pair> pairs;
  auto add = [&](EndpointId a, EndpointId b, int job, PairLabel label, uint32_t steps) {
    Pair p{a, b, job, label, {}};
    p.evidence.steps = steps;
    p.evidence.rule = "one-way-data";
    pairs.push_back(p);
  };
  add(0, 1, 0, PairLabel::kDp, 60);
  add(1, 2, 0, PairLabel::kDp, 59);
  add(2, 3, 0, PairLabel::kDp, 61);
  add(0, 3, 0, PairLabel::kDp, 60);
  add(0, 2, 0, PairLabel::kPp, 3);
  add(1, 3, 0, PairLabel::kDp, 3);
  add(4, 5, 1, PairLabel::kPp, 2);  // a job of one pair: nothing to compare with
  EXPECT_EQ(UnlabelSporadicPairs(&pairs, 0.1), 2u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NE(pairs[i].label, PairLabel::kUnknown);
  EXPECT_EQ(pairs[4].label, PairLabel::kUnknown);
  EXPECT_EQ(pairs[4].evidence.rule, "sporadic");
  EXPECT_EQ(pairs[5].label, PairLabel::kUnknown);
  EXPECT_EQ(pairs[6].label, PairLabel::kPp);
}

// ClassifyPair keeps its working vectors per thread from pair to pair: a pair classified after
// one with more steps and more sizes per step gets what it gets on a thread of its own.
TEST(PairClassifier, ResultDoesNotDependOnThePairBefore) {
  Case two_sizes;  // one way, 40 steps of two sizes each
  for (int k = 0; k < 40; ++k) {
    FlowBuilder(kA, kB).At(k * 1500 * kMs, 20 * kMs).Bytes(100 << 20).Qp(40).Into(&two_sizes.table);
    FlowBuilder(kA, kB).At(k * 1500 * kMs + 100 * kMs, 5 * kMs).Bytes(10 << 20).Qp(40).Into(&two_sizes.table);
  }
  Case pipeline, pipeline_again;
  AddPipelineSteps(&pipeline.table, 20, 8, false);
  AddPipelineSteps(&pipeline_again.table, 20, 8, false);
  Pair alone;
  std::thread([&] { alone = pipeline.Classify(); }).join();

  const Pair before = two_sizes.Classify();
  ASSERT_EQ(before.evidence.sizes_mode, 2u);
  ASSERT_GT(before.evidence.steps, alone.evidence.steps);
  const Pair after = pipeline_again.Classify();
  EXPECT_EQ(after.label, alone.label);
  EXPECT_EQ(after.evidence.rule, alone.evidence.rule);
  EXPECT_EQ(after.evidence.steps, alone.evidence.steps);
  EXPECT_EQ(after.evidence.sizes_mode, alone.evidence.sizes_mode);
  EXPECT_EQ(after.evidence.per_step_from_a, alone.evidence.per_step_from_a);
  EXPECT_EQ(after.evidence.per_step_from_b, alone.evidence.per_step_from_b);
  EXPECT_EQ(after.evidence.aligned_starts, alone.evidence.aligned_starts);
  EXPECT_EQ(after.evidence.both_way_steps, alone.evidence.both_way_steps);
}

TEST(PairClassifier, CountDistinctSizesWithTolerance) {
  EXPECT_EQ(CountDistinctSizes({}, 0.01), 0u);
  EXPECT_EQ(CountDistinctSizes({1000, 1005, 1009}, 0.01), 1u);
  EXPECT_EQ(CountDistinctSizes({1000, 1020, 2000}, 0.01), 3u);
}

}  // namespace
}  // namespace prism::analysis
