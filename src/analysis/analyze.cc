#include "analysis/analyze.h"

#include <algorithm>

#include "analysis/classify/group_structure.h"
#include "analysis/classify/step_order.h"
#include "analysis/classify/tensor_parallel.h"
#include "analysis/jobs/pairs_by_job.h"
#include "analysis/layout/layout_inference.h"
#include "analysis/parallel_for.h"
#include "analysis/steps/dp_group_steps.h"

namespace prism::analysis {

const char* PairLabelName(PairLabel label) {
  switch (label) {
    case PairLabel::kDp: return "dp";
    case PairLabel::kPp: return "pp";
    case PairLabel::kTp: return "tp";
    case PairLabel::kUnknown: break;
  }
  return "unknown";
}

namespace {

// The label passes after each pair's own (docs/design.md, "Pair classification"): each relabels pairs by
// what the others say of them. Returns each job's TP degree inside hosts.
std::vector<int> RefineLabels(const std::vector<PairTransfers>& transfers,
                              const EndpointContext& ctx, size_t num_endpoints,
                              int64_t window_end_ns, const AnalysisOptions& options,
                              AnalysisResults* results) {
  UnlabelSporadicPairs(&results->pairs, options.pairs.min_step_share);
  RefinePairs(&results->pairs, num_endpoints);
  std::vector<int> tp_of_job(results->jobs.size());
  const std::vector<std::vector<uint32_t>> pairs_of_job =
      PairsByJob(results->pairs, results->jobs.size());
  auto infer_tp = [&] {
    for (size_t j = 0; j < results->jobs.size(); ++j) {
      tp_of_job[j] = InferTensorParallel(results->pairs, pairs_of_job[j], ctx, results->jobs[j]);
      results->jobs[j].layout.tp = tp_of_job[j];
    }
  };
  // Tensor-parallel pairs first: left among the DP pairs they would join TP groups to DP groups
  // and spoil the steps the next pass measures against (classify/tensor_parallel.h).
  std::vector<DenserThanPipeline> denser;
  if (LabelTensorParallelPairs(&results->pairs, transfers, options.tensor_parallel, &denser,
                               options.threads) > 0)
    RefinePairs(&results->pairs, num_endpoints);
  infer_tp();
  // Two-way pairs again, within the steps of the DP groups found so far (classify/step_order.h).
  if (RefineByStepOrder(&results->pairs, transfers, ctx, results->job_of, tp_of_job,
                        window_end_ns, options.timelines.steps, options.step_order,
                        options.threads) > 0) {
    RefinePairs(&results->pairs, num_endpoints);
    infer_tp();
  }
  // The TP test again, with density against the GPU's other collectives, now that the step-order
  // pass has sorted collectives from pipeline pairs: a TP pair whose long records left it no
  // denser than the pipeline was first taken for a pipeline pair (classify/tensor_parallel.h).
  TensorParallelOptions after_step_order = options.tensor_parallel;
  after_step_order.denser_than_collective = true;
  if (LabelTensorParallelPairs(&results->pairs, transfers, after_step_order, &denser,
                               options.threads) > 0) {
    RefinePairs(&results->pairs, num_endpoints);
    infer_tp();
  }
  if (RevertUnwitnessedDenserPairs(&results->pairs, denser) > 0) {
    RefinePairs(&results->pairs, num_endpoints);
    infer_tp();
  }
  // The labels against the shape of a layout (classify/group_structure.h); a pipeline pair taken
  // for a collective was a witness of denser-than-pipeline, so that test is made again.
  const size_t split = SplitTpGroupsAcrossPipelines(&results->pairs, transfers, num_endpoints,
                                                    options.tensor_parallel.min_count_ratio);
  if (split + RelabelPipelinePairsWithinStages(&results->pairs, num_endpoints) > 0) {
    RevertUnwitnessedDenserPairs(&results->pairs, denser);
    RefinePairs(&results->pairs, num_endpoints);
    infer_tp();
  }
  return tp_of_job;
}

}  // namespace

AnalysisResults Analyze(const flow::FlowTable& flows, const EndpointContext& ctx,
                        int64_t window_end_ns, const AnalysisOptions& options,
                        AnalysisStats* stats) {
  AnalysisResults results;
  StageTimer timer(stats != nullptr && stats->timings ? &stats->stages : nullptr);
  RowPairs row_pairs = NumberRowPairs(flows.src(), flows.dst(), options.threads);
  JobRecognition jr = RecognizeJobs(row_pairs.keys, flows.endpoints(), ctx, options.jobs);
  results.jobs = std::move(jr.jobs);
  results.job_of = std::move(jr.job_of);
  timer.Lap("jobs", flows.size());

  PairsTransfers built = BuildAllTransfers(flows, results.job_of, options.pairs.transfers,
                                          options.threads, &row_pairs);
  row_pairs = RowPairs();
  std::vector<PairTransfers>& transfers = built.transfers;
  if (options.on_transfers_built) options.on_transfers_built();
  timer.Lap("transfers", flows.size());
  results.pairs.resize(built.pairs.size());
  std::vector<uint64_t> bocd_points(built.pairs.size(), 0);
  ParallelFor(built.pairs.size(), options.threads, [&](size_t i) {
    results.pairs[i] = ClassifyPair(built.pairs[i], transfers[i], options.pairs, &bocd_points[i]);
  });
  uint64_t pair_transfers = 0, pair_bocd_points = 0;
  for (const PairTransfers& t : transfers) pair_transfers += t.transfers.size();
  for (uint64_t n : bocd_points) pair_bocd_points += n;
  timer.Lap("classify_pairs", pair_transfers);
  const std::vector<int> tp_of_job =
      RefineLabels(transfers, ctx, flows.endpoints().size(), window_end_ns, options, &results);
  if (options.on_labels_final) options.on_labels_final(results);
  const DpGroupSteps groups =
      FindDpGroupSteps(results.pairs, transfers, ctx, results.job_of, tp_of_job, window_end_ns,
                       options.timelines.tail_guard_steps, options.timelines.steps, options.threads);
  MeasurePpPairs(&results.pairs, transfers, groups, options.threads);
  results.dp_group_of = groups.group_of;
  uint64_t dp_group_transfers = 0;
  for (size_t i = 0; i < results.pairs.size(); ++i)
    if (results.pairs[i].label == PairLabel::kDp) dp_group_transfers += transfers[i].transfers.size();
  timer.Lap("dp_steps", dp_group_transfers);

  // Tensor parallelism across hosts multiplies the degree found inside them.
  const std::vector<std::vector<uint32_t>> pairs_of_job =
      PairsByJob(results.pairs, results.jobs.size());
  for (size_t j = 0; j < results.jobs.size(); ++j)
    results.jobs[j].layout.tp *= CrossHostTensorParallel(results.pairs, pairs_of_job[j]);
  std::vector<int> stage_of(flows.endpoints().size(), -1);
  for (size_t j = 0; j < results.jobs.size(); ++j)
    InferLayout(results.pairs, pairs_of_job[j], flows.endpoints(), ctx, &results.jobs[j],
                &stage_of);
  // Timelines are the transfers' last use: each job's are freed as they are copied to its GPUs,
  // so the timelines grow into their memory instead of adding to it (the analysis's peak). One
  // job at a time, on any number of threads: two jobs side by side took twice the CPU for the
  // same wall time (their allocations queue on the one malloc arena, and the freed lists of one
  // do not fit the other's large ones, so the heap had to be trimmed as they went), and with
  // threads the network rule measures its record classes on the other core meanwhile.
  for (size_t j = 0; j < results.jobs.size(); ++j) {
    for (Timeline& t : BuildTimelines(static_cast<int>(j), results.jobs[j], results.pairs,
                                      pairs_of_job[j], &transfers, stage_of, ctx, window_end_ns,
                                      options.timelines))
      results.timelines.push_back(std::move(t));
  }
  timer.Lap("layout_timelines", pair_transfers);

  if (stats != nullptr) {
    stats->pair_transfers = pair_transfers;
    stats->pair_bocd_points = pair_bocd_points;
    stats->dp_group_transfers = dp_group_transfers;
  }
  return results;
}

}  // namespace prism::analysis
