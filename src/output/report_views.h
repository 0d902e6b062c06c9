// File: output/report_views.h
// Derived views of a finished Report (output/report.h) shared by the renderers (text summary, HTML
// page, Chrome trace), so that every view shows the same numbers:
//   - JobStepSeries: the job's step time per step (median and max over its GPUs), for plots/trends;
//   - StepSegments: one GPU step cut into non-overlapping segments (compute, PP fwd/bwd, DP,
//     bubble) from the step's PP events and DP phase;
//   - SelectTimelineGpus: which GPUs of a large job a timeline view shows (sampling).
// Sits after report.h, before the renderers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ip_addr.h"
#include "output/report.h"

namespace prism::output {

// One step of a job: the steps of its GPUs that start within half a median step of each other.
struct JobStepPoint {
  int64_t start_ns = 0;  // earliest start over the job's GPUs
  double median_s = 0, max_s = 0;
  size_t gpus = 0;  // GPU timelines contributing
};

std::vector<JobStepPoint> JobStepSeries(const Report& report, const ReportJob& job);

// Trend of a step series: least-squares slope of median step time against elapsed time, in
// percent of the series median per minute, and the medians of its first and last thirds.
struct StepTrend {
  double slope_pct_per_min = 0;
  double first_s = 0, last_s = 0;
  bool known = false;  // at least 6 steps
};
StepTrend ComputeStepTrend(const std::vector<JobStepPoint>& series);

enum class SegmentKind : int { kCompute = 0, kPpForward = 1, kPpBackward = 2, kDp = 3, kBubble = 4 };
const char* SegmentKindName(SegmentKind kind);  // "compute", "PP forward", ...

struct StepSegment {
  SegmentKind kind = SegmentKind::kBubble;
  int64_t start_ns = 0, end_ns = 0;
};

// Cuts [step.start_ns, step.end_ns) into adjacent, non-overlapping segments covering it all:
// the DP phase wins over everything; time with a PP transfer active is "PP forward" (or "PP
// backward" when only gradients are in flight); an idle gap that ends where this GPU starts
// sending is compute (as in the timeline builder: the gap before a GPU's own send is its
// compute), any other idle gap is bubble (waiting for a peer). Adjacent equal kinds merge.
std::vector<StepSegment> StepSegments(const ReportStep& step);

// The GPUs a timeline view of `job` shows, with why. Jobs with at most `max_all` GPUs show all;
// larger ones show one pipeline replica (a GPU per stage, following PP peers from the first GPU of
// stage 0, so PP arrows connect) plus every GPU named in a finding on the job and the replica
// through the first such GPU. Ordered by stage, then address.
struct SelectedGpu {
  IpAddr gpu;
  int stage = -1;
  std::string why;  // "all", "pipeline replica", "finding"
};
struct GpuSelection {
  std::vector<SelectedGpu> gpus;
  bool sampled = false;  // fewer than all of the job's GPUs with a timeline
  size_t total = 0;      // GPUs of the job with a timeline
};
GpuSelection SelectTimelineGpus(const Report& report, const ReportJob& job, size_t max_all);

}  // namespace prism::output
