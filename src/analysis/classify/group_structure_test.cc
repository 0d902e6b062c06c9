#include "analysis/classify/group_structure.h"

#include <gtest/gtest.h>

namespace prism::analysis {
namespace {

Pair MakePair(EndpointId a, EndpointId b, PairLabel label, int job = 0) {
  Pair p;
  p.a = a;
  p.b = b;
  p.job = job;
  p.label = label;
  p.evidence.rule = "first-pass";
  return p;
}

PairTransfers WithTransfers(size_t n) {
  PairTransfers t;
  t.transfers.resize(n);
  return t;
}

// The corpus's DP2 x PP2 x TP2 job under 1-in-10 sampling, as the earlier passes left it: GPUs
// 0-3 are stage 0 (TP 0-1 and 2-3, DP 0-2 and 1-3), 4-7 stage 1 (TP 4-5, 6-7; DP 4-6, 5-7),
// pipeline pairs 0-4, 1-5, 2-6, 3-7. Stage 1's DP pair 5-7 came out ordered and stayed PP, and
// the pipeline pairs 1-5 and 3-7, denser than it, were taken for TP.
struct SampledTpJob {
  std::vector<Pair> pairs{MakePair(0, 1, PairLabel::kTp), MakePair(2, 3, PairLabel::kTp),
                          MakePair(4, 5, PairLabel::kTp), MakePair(6, 7, PairLabel::kTp),
                          MakePair(0, 2, PairLabel::kDp), MakePair(1, 3, PairLabel::kDp),
                          MakePair(4, 6, PairLabel::kDp), MakePair(5, 7, PairLabel::kPp),
                          MakePair(0, 4, PairLabel::kPp), MakePair(1, 5, PairLabel::kTp),
                          MakePair(2, 6, PairLabel::kPp), MakePair(3, 7, PairLabel::kTp)};
  std::vector<PairTransfers> transfers{WithTransfers(690), WithTransfers(660), WithTransfers(665),
                                       WithTransfers(694), WithTransfers(180), WithTransfers(185),
                                       WithTransfers(78),  WithTransfers(88),  WithTransfers(281),
                                       WithTransfers(276), WithTransfers(277), WithTransfers(263)};
};

TEST(GroupStructure, TpPairsAsSparseAsAPipelineInsideTheirTpGroupArePipelinePairs) {
  SampledTpJob job;
  EXPECT_EQ(SplitTpGroupsAcrossPipelines(&job.pairs, job.transfers, 8, 2.0), 2u);
  EXPECT_EQ(job.pairs[9].label, PairLabel::kPp);
  EXPECT_EQ(job.pairs[9].evidence.rule, "pipeline-between-tp-groups");
  EXPECT_EQ(job.pairs[11].label, PairLabel::kPp);
  for (size_t i : {0, 1, 2, 3}) EXPECT_EQ(job.pairs[i].label, PairLabel::kTp) << i;

  EXPECT_EQ(RelabelPipelinePairsWithinStages(&job.pairs, 8), 1u);
  EXPECT_EQ(job.pairs[7].label, PairLabel::kDp);
  EXPECT_EQ(job.pairs[7].evidence.rule, "within-stage");
  for (size_t i : {8, 9, 10, 11}) EXPECT_EQ(job.pairs[i].label, PairLabel::kPp) << i;
}

TEST(GroupStructure, AConsistentLayoutIsLeftAlone) {
  SampledTpJob job;
  job.pairs[7].label = PairLabel::kDp;
  job.pairs[9].label = PairLabel::kPp;
  job.pairs[11].label = PairLabel::kPp;
  EXPECT_EQ(SplitTpGroupsAcrossPipelines(&job.pairs, job.transfers, 8, 2.0), 0u);
  EXPECT_EQ(RelabelPipelinePairsWithinStages(&job.pairs, 8), 0u);
}

// A TP group's all-reduce is min_count_ratio times denser than the pipeline inside its
// component: it stays TP even when the component holds a pipeline pair.
TEST(GroupStructure, DenseTpPairsStayTp) {
  std::vector<Pair> pairs{MakePair(0, 1, PairLabel::kTp), MakePair(1, 2, PairLabel::kTp),
                          MakePair(0, 2, PairLabel::kPp)};
  std::vector<PairTransfers> transfers{WithTransfers(600), WithTransfers(300), WithTransfers(280)};
  EXPECT_EQ(SplitTpGroupsAcrossPipelines(&pairs, transfers, 3, 2.0), 1u);
  EXPECT_EQ(pairs[0].label, PairLabel::kTp);
  EXPECT_EQ(pairs[1].label, PairLabel::kPp);
}

// When most pipeline pairs fall inside a stage, a collective label joined two stages: the
// pipeline pairs are not the ones in doubt.
TEST(GroupStructure, PipelinePairsMostlyInsideAStageAreKept) {
  std::vector<Pair> pairs{MakePair(0, 2, PairLabel::kDp), MakePair(1, 3, PairLabel::kDp),
                          MakePair(0, 1, PairLabel::kDp),  // a pipeline pair taken for DP
                          MakePair(2, 3, PairLabel::kPp)};
  EXPECT_EQ(RelabelPipelinePairsWithinStages(&pairs, 4), 0u);
  EXPECT_EQ(pairs[3].label, PairLabel::kPp);
}

// Counted per job: another job's pipeline pairs between stages do not outvote this one's.
TEST(GroupStructure, CountsArePerJob) {
  std::vector<Pair> pairs{MakePair(0, 1, PairLabel::kDp, 0), MakePair(0, 1, PairLabel::kPp, 0),
                          MakePair(4, 5, PairLabel::kPp, 1), MakePair(6, 7, PairLabel::kPp, 1)};
  EXPECT_EQ(RelabelPipelinePairsWithinStages(&pairs, 8), 0u);
  EXPECT_EQ(pairs[1].label, PairLabel::kPp);
}

}  // namespace
}  // namespace prism::analysis
