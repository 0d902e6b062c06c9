// File: service/stable_ids.h
// Ids of jobs and findings derived from what identifies them, not from the order in which one
// process met them: one `serve`, each shard's analyser and a restarted analyser give the same job
// and the same finding the same id (docs/scale-out.md, Identical ids). The hash is 64-bit FNV-1a
// over a canonical text, stable across builds, platforms and runs (std::hash promises none of it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/ip_addr.h"

namespace prism::service {

uint64_t Fnv1a64(std::string_view text);

// "job-" and 12 hex digits (48 bits) of the hash of `gpus` (in address order) as text. `attempt`
// above 1 appends "-<attempt>": the tracker's way out when the id is already another job's.
std::string StableJobId(const std::vector<IpAddr>& gpus, int attempt = 1);

// A finding's id from its identity (`identity`: kind, job, metric, GPUs, switches) and the end of
// the first window that reported it. In [2^32, 2^53): an exact number in JSON and JavaScript, and
// above every id of a store written while findings were numbered from 1, so old rows are never
// overwritten by new ones.
int64_t StableFindingId(std::string_view identity, int64_t first_window_end_ns);

// The id to try when `id` is taken by another finding: the next one, within the same range.
int64_t NextFindingId(int64_t id);

}  // namespace prism::service
