#include "analysis/timeline/timeline_builder.h"

#include <gtest/gtest.h>

namespace prism::analysis {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kPeriodMs = 2000;

// Four GPUs on four hosts in one DP ring (0-1-2-3-0), both directions of every link busy in each
// step's all-reduce. Every 2-s step GPU 0's links finish at +50 ms; the links of GPU 2 (to 1 and
// 3) finish `late_ms[k]` later: GPUs 1, 2 and 3 end their collective then, GPU 0 does not wait.
struct Ring {
  Job job;
  std::vector<Pair> pairs;
  std::vector<PairTransfers> transfers;
  std::vector<int> stage_of{0, 0, 0, 0};
  EndpointContext ctx;
};

Ring MakeRing(int tp, const std::vector<int64_t>& late_ms) {
  Ring r;
  r.job.id = "job0";
  r.job.gpus = {0, 1, 2, 3};
  r.job.layout.dp = 4 / tp;
  r.job.layout.pp = 1;
  r.job.layout.tp = tp;
  r.job.layout.stages = {{0, 1, 2, 3}};
  r.job.layout.consistent = true;
  r.ctx.host = {0, 1, 2, 3};
  r.ctx.is_gpu = {1, 1, 1, 1};
  r.ctx.local_gpu = {0, 0, 0, 0};
  for (auto [a, b] : {std::pair{0u, 1u}, {1u, 2u}, {2u, 3u}, {0u, 3u}}) {
    Pair p;
    p.a = a;
    p.b = b;
    p.job = 0;
    p.label = PairLabel::kDp;
    r.pairs.push_back(p);
    PairTransfers pt;
    for (size_t k = 0; k < late_ms.size(); ++k) {
      const int64_t start = int64_t(k + 1) * kPeriodMs * kMs;
      const bool touches_2 = a == 2 || b == 2;
      const int64_t end = start + (50 + (touches_2 ? late_ms[k] : 0)) * kMs;
      pt.transfers.push_back({start, end, 1 << 20, 1, true});
      pt.transfers.push_back({start, end, 1 << 20, 1, false});
    }
    r.transfers.push_back(std::move(pt));
  }
  return r;
}

std::vector<int64_t> StepDurationsMs(const Timeline& tl) {
  std::vector<int64_t> out;
  for (const TimelineStep& s : tl.steps) out.push_back((s.end_ns - s.start_ns) / kMs);
  return out;
}

const std::vector<int64_t> kLate = {0, 40, 0, 40, 0, 40, 0, 40, 0, 40, 0, 40};

// The four GPUs' timelines of the ring with `tp`; the window ends two periods after the last step.
std::vector<Timeline> RingTimelines(int tp) {
  Ring r = MakeRing(tp, kLate);
  return BuildTimelines(0, r.job, r.pairs, PairsByJob(r.pairs, 1)[0], &r.transfers, r.stage_of,
                        r.ctx, int64_t(kLate.size() + 2) * kPeriodMs * kMs, {});
}

// Without tensor parallelism a GPU's step ends with its own collective: GPU 0's steps stay 2 s
// while its ring neighbours' follow GPU 2's late finishes.
TEST(BuildTimelines, WithoutTensorParallelismEachGpuEndsWithItsOwnCollective) {
  const auto timelines = RingTimelines(1);
  ASSERT_EQ(timelines.size(), 4u);
  ASSERT_GE(timelines[0].steps.size(), 8u);
  for (int64_t d : StepDurationsMs(timelines[0])) EXPECT_EQ(d, kPeriodMs);
  const auto gpu1 = StepDurationsMs(timelines[1]);
  for (size_t k = 0; k < gpu1.size(); ++k)
    EXPECT_EQ(gpu1[k], kPeriodMs + kLate[k + 1] - kLate[k]) << "step " << k;
  // Every GPU's steps are contiguous.
  for (const Timeline& tl : timelines)
    for (size_t k = 1; k < tl.steps.size(); ++k)
      EXPECT_EQ(tl.steps[k].start_ns, tl.steps[k - 1].end_ns);
}

// With tensor-parallel peers a GPU starts its next forward only with them: the stage's boundary.
TEST(BuildTimelines, WithTensorParallelismTheStageSharesItsBoundaries) {
  const auto timelines = RingTimelines(2);
  ASSERT_EQ(timelines.size(), 4u);
  ASSERT_GE(timelines[0].steps.size(), 8u);
  EXPECT_EQ(StepDurationsMs(timelines[0]), StepDurationsMs(timelines[1]));
  const auto gpu0 = StepDurationsMs(timelines[0]);
  for (size_t k = 0; k < gpu0.size(); ++k)
    EXPECT_EQ(gpu0[k], kPeriodMs + kLate[k + 1] - kLate[k]) << "step " << k;
}

// A 2-stage pipeline without tensor parallelism: GPUs 0 and 1 form stage 0, GPUs 2 and 3 stage 1
// (PP pairs 0-2 and 1-3, DP pairs 0-1 and 2-3). In every 2-s step the stage-0 GPUs send two
// activations (at +30 and +100 ms), receive two gradients (+300, +400 ms), and both stages
// all-reduce at +1000..+1050 ms. `late_ms[g][k]` delays GPU g's first activation of step k: how
// long it took to come back from step k-1.
std::vector<Timeline> PipelineTimelines(const std::vector<std::vector<int64_t>>& late_ms) {
  Job job;
  job.id = "job0";
  job.gpus = {0, 1, 2, 3};
  job.layout.dp = 2;
  job.layout.pp = 2;
  job.layout.tp = 1;
  job.layout.stages = {{0, 1}, {2, 3}};
  job.layout.consistent = true;
  EndpointContext ctx;
  ctx.host = {0, 1, 2, 3};
  ctx.is_gpu = {1, 1, 1, 1};
  ctx.local_gpu = {0, 0, 0, 0};
  const size_t steps = late_ms[0].size();
  std::vector<Pair> pairs;
  std::vector<PairTransfers> transfers;
  auto add = [&](EndpointId a, EndpointId b, PairLabel label) {
    Pair p;
    p.a = a;
    p.b = b;
    p.job = 0;
    p.label = label;
    pairs.push_back(p);
    PairTransfers pt;
    for (size_t k = 0; k < steps; ++k) {
      const int64_t t0 = int64_t(k + 1) * kPeriodMs;
      auto at = [&](int64_t from_ms, int64_t to_ms, bool from_a) {
        pt.transfers.push_back({(t0 + from_ms) * kMs, (t0 + to_ms) * kMs, 1 << 20, 1, from_a});
      };
      if (label == PairLabel::kDp) {
        at(1000, 1050, true);
        at(1000, 1050, false);
        continue;
      }
      const int64_t late = late_ms[a][k];
      at(30 + late, 35 + late, true);  // stage 0 (a) -> stage 1 (b): activations
      at(100 + late, 105 + late, true);
      at(300 + late, 305 + late, false);  // gradients back
      at(400 + late, 405 + late, false);
    }
    transfers.push_back(std::move(pt));
  };
  add(0, 1, PairLabel::kDp);
  add(2, 3, PairLabel::kDp);
  add(0, 2, PairLabel::kPp);
  add(1, 3, PairLabel::kPp);
  return BuildTimelines(0, job, pairs, PairsByJob(pairs, 1)[0], &transfers, {0, 0, 1, 1}, ctx,
                        int64_t(steps + 2) * kPeriodMs * kMs, {});
}

// GPU 0 came back 40 ms late from one step (its next first activation left 40 ms after its
// usual 980 ms): that step of GPU 0 ends 40 ms later, and only that one, and only GPU 0's.
TEST(BuildTimelines, AFirstStageGpuThatResumesLateEndsItsStepLater) {
  std::vector<std::vector<int64_t>> late(4, std::vector<int64_t>(12, 0));
  late[0][6] = 40;
  const auto timelines = PipelineTimelines(late);
  ASSERT_EQ(timelines.size(), 4u);
  const auto gpu0 = StepDurationsMs(timelines[0]);
  ASSERT_GE(gpu0.size(), 10u);
  // The step that ends before step 6's first activation is one longer, the one after shorter.
  int longer = 0, shorter = 0;
  for (int64_t d : gpu0) {
    longer += d == kPeriodMs + 40;
    shorter += d == kPeriodMs - 40;
    EXPECT_TRUE(d == kPeriodMs || d == kPeriodMs + 40 || d == kPeriodMs - 40) << d;
  }
  EXPECT_EQ(longer, 1);
  EXPECT_EQ(shorter, 1);
  for (int64_t d : StepDurationsMs(timelines[1])) EXPECT_EQ(d, kPeriodMs);
}

// Late together with its stage peer (a loaded host slows both forwards), or late step after
// step (a GPU slow in its forward op): its compute, in the next step; no end moves.
TEST(BuildTimelines, FirstStageGpusLateTogetherOrForStepsKeepTheirEnds) {
  std::vector<std::vector<int64_t>> together(4, std::vector<int64_t>(12, 0));
  together[0][6] = together[1][6] = 40;
  std::vector<std::vector<int64_t>> slow(4, std::vector<int64_t>(12, 0));
  for (size_t k = 4; k < 8; ++k) slow[0][k] = 40;
  for (const auto& late : {together, slow}) {
    const auto timelines = PipelineTimelines(late);
    ASSERT_EQ(timelines.size(), 4u);
    for (const Timeline& tl : timelines)
      for (int64_t d : StepDurationsMs(tl)) EXPECT_EQ(d, kPeriodMs);
  }
}

}  // namespace
}  // namespace prism::analysis
