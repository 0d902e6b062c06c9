// File: service/shard_assignment.h
// Which shard analyses which job (docs/scale-out.md, Sharding by job): the recogniser's rule for
// turning the jobs it recognised into GPU -> job -> shard entries. A job stays where most of its
// GPUs were (a job that grows takes its new GPUs along; two jobs that merge go to the shard of
// the larger part); a new job goes to the shard with the fewest GPUs. Deterministic: the same
// jobs and map give the same answer.
#pragma once

#include <map>
#include <vector>

#include "core/ip_addr.h"
#include "scaleout/shard_map.h"

namespace prism::service {

// The entries of every GPU of `jobs` (each sorted by address); GPUs of no job are not in the
// answer (the caller keeps their old entries: a GPU that comes back goes where it was until it is
// recognised again).
std::map<IpAddr, scaleout::ShardEntry> AssignShards(
    const std::vector<std::vector<IpAddr>>& jobs,
    const std::map<IpAddr, scaleout::ShardEntry>& current, int shards);

}  // namespace prism::service
