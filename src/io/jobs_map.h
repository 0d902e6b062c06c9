// File: io/jobs_map.h
// The scheduler's view of the cluster (--jobs-map FILE for analyze and serve): which scheduler
// job (id, user, name) runs on which hosts or addresses, so recognised jobs and their findings can
// be named the way their owners know them (output/scheduler_jobs.h does the matching). One file
// may mix two kinds of line:
//   - CSV: host_or_ip,job_id,user,name (a header line of these names; name may be empty); the
//     first field may also be a Slurm host list;
//   - Slurm: the output of squeue -o "%i|%u|%j|%N": JOBID|USER|NAME|NODELIST, NODELIST a host
//     list as Slurm writes it (gpu[001-004,007],node[1-3]); its header line is skipped, and
//     so are jobs without nodes (pending: empty NODELIST or "(null)"), counted.
// Empty lines and lines starting with '#' are comments. Bad lines are counted (jobs_map_bad_line)
// and skipped; the first few are described on stderr as FILE:LINE: what was expected.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/stats.h"
#include "core/status.h"

namespace prism::io {

struct SchedulerJob {
  std::string id, user, name;
};

struct JobsMap {
  std::vector<SchedulerJob> jobs;  // in order of first appearance
  // Host name or IP address text -> indices into `jobs` (a node may be shared by several jobs).
  std::map<std::string, std::vector<size_t>> by_host;
  uint64_t lines = 0;          // data lines taken
  uint64_t bad_lines = 0;      // skipped as malformed
  uint64_t pending_lines = 0;  // squeue jobs without nodes, skipped
  bool empty() const { return jobs.empty(); }
};

// Expands a Slurm host list: "gpu[001-004,007],node[1-3],login" -> gpu001 gpu002 gpu003 gpu004
// gpu007 node1 node2 node3 login. Zero padding follows the range's first number; several bracket
// groups in one name multiply out (rack[1-2]-n[1-2]). kInvalidArgument naming the problem for
// unbalanced or nested brackets, an empty or reversed range, a non-number, an empty name, or more
// than kMaxExpandedHosts hosts.
inline constexpr size_t kMaxExpandedHosts = 1'000'000;
StatusOr<std::vector<std::string>> ExpandSlurmHostList(std::string_view list);

// kNotFound when the file cannot be read; kDataLoss when it holds no usable line.
StatusOr<JobsMap> ReadJobsMap(const std::string& path, Stats* stats);
StatusOr<JobsMap> ReadJobsMapBuffer(std::string_view data, const std::string& name, Stats* stats);

}  // namespace prism::io
