// File: output/scheduler_jobs.h
// Names recognised jobs by the scheduler's jobs (--jobs-map, io/jobs_map.h), on a built Report
// (analyze's, or each serve window's after the tracker gave its job ids):
//   - each GPU of a job is looked up by its address, then by its host name (ReportJob::host_of:
//     from the topology), exactly or by the short name before the first '.' on either side;
//   - the job is named by the scheduler job holding most of its GPUs (ties: the first in the
//     map), and every finding of the job carries the same name;
//   - a recognised job with GPUs in another scheduler job (and not in its own) spans two jobs:
//     a scheduler_mismatch finding (warning) naming both and the GPUs outside its own; a scheduler
//     job that names two or more recognised jobs is split: a scheduler_mismatch finding (info)
//     naming them. Either means the recognition or the map is wrong, or a tenant runs one
//     training under two allocations (or two trainings under one).
// Sits after report building (output), before JSON / HTML / alerts.
#pragma once

#include "io/jobs_map.h"
#include "output/report.h"

namespace prism::output {


struct SchedulerMatch {
  size_t jobs_named = 0;      // recognised jobs given a scheduler job
  size_t jobs_unmatched = 0;  // recognised jobs none of whose GPUs the map names
  size_t mismatches = 0;      // scheduler_mismatch findings added
};

// Sets ReportJob::scheduler and ReportFinding::scheduler, and appends the scheduler_mismatch
// findings (over the report's time range) to report->findings.
SchedulerMatch ApplySchedulerJobs(const io::JobsMap& map, Report* report);

}  // namespace prism::output
