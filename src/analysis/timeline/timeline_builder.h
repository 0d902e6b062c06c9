// File: analysis/timeline/timeline_builder.h
// Timelines (docs/design.md): every GPU's step-by-step timeline. The DP activity at the end of each
// step marks its boundary. A stage's GPUs share their boundaries (the DP rings of one stage run in
// lockstep and their optimizer follows), so the DP transfers of the whole stage are cut into step
// activities together (analysis/steps), which is robust to a lost record or a quiet ring; a step
// runs from the end of one DP activity to the end of the next (in a job without tensor
// parallelism, from the end of the GPU's own DP phase: timeline_builder.cc, GpuSteps). Inside a step, PP transfers towards
// the later stage are forward (activations) and the others backward (gradients); the gaps before a
// GPU's own PP sends are its compute (measured from when its tensor-parallel group had the op's
// input); what remains besides the DP phase is pipeline bubble.
#pragma once

#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/classify/transfers.h"
#include "analysis/endpoint_context.h"
#include "analysis/jobs/pairs_by_job.h"
#include "analysis/steps/step_segmenter.h"

namespace prism::analysis {

struct TimelineOptions {
  StepSegmenterOptions steps = DpGroupSegmenterOptions();
  // The last DP activity is dropped when it ends closer than this share of a step to the window
  // end: the rest of its burst may lie beyond the window.
  double tail_guard_steps = 0.25;
  // A send that starts within this of a transfer from the same peer is not an op measurement
  // (see median_*_op_ns): a millisecond, as for pair classification's aligned starts.
  int64_t paired_send_ns = 1'000'000;
  // The steps' PP events, once compute and bubble are measured from them, are read only by the
  // outputs that draw them (--pp-events, the HTML page, the trace). At 10,000 GPUs they are a
  // fifth of the analysis's peak memory (~30 per step), so a caller that draws none drops them;
  // their count stays (TimelineStep::pp_event_count).
  bool keep_pp_events = true;
};

// `(*pair_transfers)[i]` are the transfers of `pairs[i]`; `job_pairs` the job's pairs (indices
// into `pairs`); `stage_of` per endpoint. The job's pairs' transfers are consumed (freed once
// copied to their GPUs: timelines are their last use, and the copies would otherwise add to them
// at the analysis's memory peak); other jobs' pairs are not touched, so jobs may be built in
// parallel.
std::vector<Timeline> BuildTimelines(int job_index, const Job& job, const std::vector<Pair>& pairs,
                                     PairIndices job_pairs,
                                     std::vector<PairTransfers>* pair_transfers,
                                     const std::vector<int>& stage_of, const EndpointContext& ctx,
                                     int64_t window_end_ns, const TimelineOptions& options);

}  // namespace prism::analysis
