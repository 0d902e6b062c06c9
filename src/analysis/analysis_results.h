// File: analysis/analysis_results.h
// What the analysis of one window produces (docs/design.md, Analysis results): jobs with their
// layout, labelled GPU pairs, and per-GPU step timelines. Diagnosis and every output read these;
// nothing here knows where the records came from. GPUs are endpoint ids of the window's FlowTable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/name_table.h"

namespace prism::analysis {

struct Layout {
  int dp = 0, pp = 0, tp = 0;
  int microbatches = 0;
  std::vector<std::vector<EndpointId>> stages;  // stage 0 first; GPUs of each stage in address order
  bool consistent = false;  // dp * pp * tp == number of GPUs and every GPU has a stage
};

struct Job {
  std::string id;                  // "job<k>", k in order of the lowest GPU address
  std::vector<EndpointId> gpus;    // address order
  std::vector<std::string> hosts;  // sorted
  Layout layout;
};

enum class PairLabel { kDp, kPp, kTp, kUnknown };
const char* PairLabelName(PairLabel label);

struct PairEvidence {
  uint32_t records = 0;         // data records (control messages excluded)
  uint32_t control_records = 0; // small control writes (clear-to-send and the like)
  uint32_t transfers = 0;       // records grouped into transfers (QPs/channels of one message)
  uint32_t steps = 0;           // step segments found by change-point detection
  uint32_t sizes_mode = 0;      // mode over steps of the number of distinct transfer sizes
  bool bidirectional = false;   // data flows both ways (PP: activations forward, gradients back)
  uint64_t bytes_from_a = 0, bytes_from_b = 0;
  int32_t first_from_a = 0;     // steps whose first transfer goes a -> b, minus those b -> a
  double lead_a = 0;            // mean over transfers of (sent a -> b so far) - (sent b -> a so
                                // far): > 0 when a -> b leads, as activations lead gradients
  uint32_t per_step_from_a = 0; // median transfers per step a -> b
  uint32_t per_step_from_b = 0; // median transfers per step b -> a
  // Whether the two directions move together (a collective) or take turns (a pipeline):
  double aligned_starts = 0;     // share of transfers starting together with one of the other
                                 // direction (within a millisecond)
  uint32_t both_way_steps = 0;   // steps with data both ways
  uint32_t ordered_steps = 0;    // of those, steps that open with one direction alone and close
                                 // with the other alone (forward first, backward last)
  double step_ordered_share = -1;  // the same, net of direction, within the steps of the job's
                                   // DP groups (-1: not measured; classify/step_order.h)
  std::string rule;             // which rule decided the label
};

struct Pair {
  EndpointId a = 0, b = 0;  // a < b in address order
  int job = -1;
  PairLabel label = PairLabel::kUnknown;
  PairEvidence evidence;
};

struct PpEvent {
  int64_t start_ns = 0, end_ns = 0;
  EndpointId peer = 0;
  bool forward = true;   // activation (towards the later stage) or gradient (towards the earlier)
  bool outgoing = true;  // sent by this GPU
};

struct TimelineStep {
  int64_t start_ns = 0, end_ns = 0;        // step boundaries: end of consecutive DP phases
  int64_t dp_start_ns = 0, dp_end_ns = 0;  // this GPU's DP phase (its first to last DP byte)
  // This GPU's first DP byte sent in the step's DP phase (0: none). A GPU joins its collective
  // when its backward is done: its first send, not its first byte (a ready neighbour's chunk
  // reaches a late GPU first), says when.
  int64_t dp_first_send_ns = 0;
  std::vector<PpEvent> pp_events;  // empty unless kept (TimelineOptions::keep_pp_events)
  uint32_t pp_event_count = 0;     // how many there were, kept or not
  int64_t compute_ns = 0;                  // time attributed to computation
  int64_t bubble_ns = 0;                   // idle time waiting on peers (pipeline bubble)
  int64_t median_op_ns = 0;                // one compute op: the forward median, else backward
  int64_t median_fwd_op_ns = 0;            // median gap before forward sends (0: < 2 of them)
  int64_t median_bwd_op_ns = 0;            // median gap before backward sends
};

struct Timeline {
  EndpointId gpu = 0;
  int job = -1;
  int stage = -1;
  std::vector<TimelineStep> steps;
};

struct AnalysisResults {
  std::vector<Job> jobs;
  std::vector<Pair> pairs;
  std::vector<Timeline> timelines;
  std::vector<int> job_of;  // per endpoint id: job index or -1
  std::vector<int> dp_group_of;  // per endpoint id: DP group (ring, joined through hosts) or -1
};

}  // namespace prism::analysis
