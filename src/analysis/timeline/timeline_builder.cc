#include "analysis/timeline/timeline_builder.h"

#include <algorithm>
#include <map>

#include "analysis/steps/dp_group_steps.h"

namespace prism::analysis {
namespace {

struct GpuTransfer {
  int64_t start_ns, end_ns;
  EndpointId peer;
  bool outgoing;
  bool dp;
};

int64_t MedianOf(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

std::vector<Timeline> BuildTimelines(int job_index, const Job& job, const std::vector<Pair>& pairs,
                                     const std::vector<PairTransfers>& pair_transfers,
                                     const std::vector<int>& stage_of, int64_t window_end_ns,
                                     const TimelineOptions& options) {
  const int num_stages = std::max<int>(1, static_cast<int>(job.layout.stages.size()));
  // Per stage: all DP transfers; per GPU: its own transfers.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> stage_dp(num_stages);
  std::map<EndpointId, std::vector<GpuTransfer>> own;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair& p = pairs[i];
    if (p.job != job_index) continue;
    const bool dp = p.label == PairLabel::kDp;
    for (const Transfer& t : pair_transfers[i].transfers) {
      EndpointId from = t.from_a ? p.a : p.b, to = t.from_a ? p.b : p.a;
      own[from].push_back({t.start_ns, t.end_ns, to, true, dp});
      own[to].push_back({t.start_ns, t.end_ns, from, false, dp});
      if (!dp) continue;
      int s = stage_of[p.a] >= 0 ? stage_of[p.a] : stage_of[p.b];
      if (s >= 0 && s < num_stages) stage_dp[s].push_back({t.start_ns, t.end_ns});
    }
  }
  for (auto& [g, v] : own)
    std::sort(v.begin(), v.end(), [](const GpuTransfer& x, const GpuTransfer& y) {
      return x.start_ns < y.start_ns;
    });

  // Step boundaries per stage: ends of the DP activities.
  std::vector<std::vector<Activity>> stage_steps(num_stages);
  for (int s = 0; s < num_stages; ++s)
    stage_steps[s] = DpActivities(std::move(stage_dp[s]), window_end_ns,
                                  options.tail_guard_steps, options.steps);

  std::vector<Timeline> out;
  for (EndpointId g : job.gpus) {
    Timeline tl;
    tl.gpu = g;
    tl.job = job_index;
    tl.stage = stage_of[g];
    const int s = tl.stage >= 0 && tl.stage < num_stages ? tl.stage : 0;
    const auto& acts = stage_steps[s];
    const auto& mine = own[g];
    size_t cursor = 0;
    for (size_t k = 1; k < acts.size(); ++k) {
      TimelineStep step;
      step.start_ns = acts[k - 1].end_ns;
      step.end_ns = acts[k].end_ns;
      step.dp_start_ns = acts[k].start_ns;
      step.dp_end_ns = acts[k].end_ns;
      int64_t own_dp_start = INT64_MAX, own_dp_end = INT64_MIN;
      while (cursor < mine.size() && mine[cursor].start_ns < step.start_ns) ++cursor;
      std::vector<int64_t> op_gaps;
      int64_t last_event_end = step.start_ns;
      for (size_t i = cursor; i < mine.size() && mine[i].start_ns < step.end_ns; ++i) {
        const GpuTransfer& t = mine[i];
        if (t.dp) {
          if (t.start_ns >= acts[k].start_ns) {
            own_dp_start = std::min(own_dp_start, t.start_ns);
            own_dp_end = std::max(own_dp_end, t.end_ns);
          }
          continue;
        }
        PpEvent e{t.start_ns, t.end_ns, t.peer, true, t.outgoing};
        int peer_stage = stage_of[t.peer];
        int from_stage = t.outgoing ? tl.stage : peer_stage;
        int to_stage = t.outgoing ? peer_stage : tl.stage;
        e.forward = from_stage < to_stage;
        if (t.outgoing) {
          int64_t gap = t.start_ns - last_event_end;
          if (gap > 0) {
            op_gaps.push_back(gap);
            step.compute_ns += gap;
          }
        }
        last_event_end = std::max(last_event_end, t.outgoing ? t.start_ns : t.end_ns);
        step.pp_events.push_back(e);
      }
      if (own_dp_start != INT64_MAX) {
        step.dp_start_ns = own_dp_start;
        step.dp_end_ns = std::max(own_dp_end, own_dp_start);
      }
      // The last backward runs between the last PP event and the DP phase.
      if (!step.pp_events.empty() && step.dp_start_ns > last_event_end)
        step.compute_ns += step.dp_start_ns - last_event_end;
      const int64_t dp_ns = std::max<int64_t>(0, step.dp_end_ns - step.dp_start_ns);
      step.bubble_ns = std::max<int64_t>(0, step.end_ns - step.start_ns - dp_ns - step.compute_ns);
      step.median_op_ns = MedianOf(op_gaps);
      tl.steps.push_back(std::move(step));
    }
    out.push_back(std::move(tl));
  }
  return out;
}

}  // namespace prism::analysis
