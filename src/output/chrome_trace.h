// File: output/chrome_trace.h
// The reconstructed per-GPU timelines of a Report (output/report.h) as Chrome Trace Event JSON
// (the "JSON Object Format" that ui.perfetto.dev and chrome://tracing open), written by
// `llmprism analyze --trace FILE`:
//   - one process per job (pid = job number + 1; pid 0 "cluster" holds findings with no job),
//     one thread per GPU (named "ADDRESS stage S host"),
//   - per GPU a "step N" slice per step with the step's segments nested inside it (compute, PP
//     forward, PP backward, DP, bubble: output/report_views.h StepSegments, which never overlap),
//   - a flow arrow (ph "s" on the sender at the transfer's start, ph "f" with bp "e" on the
//     receiver at its end) per PP transfer between two GPUs in the trace,
//   - findings as instant events (thread-scoped on each GPU they name that is in the trace, else
//     process-scoped on their job, else global).
// Times: ts/dur in microseconds since the report start (otherData.origin_unix_ns), written with
// three decimals so that ts * 1000 + origin is exactly the report's ns.
// Large jobs are sampled like the HTML page (SelectTimelineGpus) unless options.all_gpus; which
// GPUs were kept is recorded in each process's "sampling" metadata and in otherData.
#pragma once

#include <cstddef>
#include <ostream>

#include "core/status.h"
#include "output/report.h"

namespace prism::output {

struct ChromeTraceOptions {
  bool all_gpus = false;        // every GPU of every job (large: ~100 MB per 1,000 GPUs-minute)
  size_t max_gpus_all = 64;     // jobs up to this size are written whole even when sampling
};

// kDataLoss when the stream fails.
Status WriteChromeTrace(const Report& report, std::ostream* out,
                        const ChromeTraceOptions& options = {});

}  // namespace prism::output
