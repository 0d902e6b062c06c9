// File: analysis/jobs/job_recognition.h
// Job recognition (docs/design.md): GPU pairs that exchange traffic are edges; union-find over
// them, then every GPU of one host joins its host's component (NVLink traffic inside a host is
// invisible to switches).
// Beyond the paper, traffic that is not training must not glue jobs together: endpoints the
// topology marks non-GPU are left out, and "hubs" — endpoints with many peers whose peers fall
// into several otherwise separate components (storage, monitoring) — are left out too.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/endpoint_context.h"
#include "core/big_blocks.h"

namespace prism::analysis {

struct JobRecognitionOptions {
  size_t hub_min_peers = 48;     // fewer peers than this: never a hub (a ring or pipeline has few)
  size_t hub_min_components = 3; // a candidate touching this many components is a hub
  size_t min_gpus = 2;           // smaller components are not reported as jobs
};

struct JobRecognition {
  std::vector<Job> jobs;     // layout left empty here
  std::vector<int> job_of;   // per endpoint: job index or -1
  std::vector<EndpointId> hubs;
  size_t non_gpu_endpoints = 0;
};

// `pair_keys`: the distinct communicating pairs, (min << 32 | max) of endpoint ids, sorted.
JobRecognition RecognizeJobs(std::span<const uint64_t> pair_keys, const EndpointTable& endpoints,
                             const EndpointContext& ctx, const JobRecognitionOptions& options);

// The distinct unordered endpoint pairs of a table's src/dst columns, and each row's among them.
struct RowPairs {
  std::vector<uint64_t> keys;          // PairKey of each distinct pair, sorted
  BigVector<uint32_t> key_of_row;      // per row, the index of its pair in `keys` (a kept block)
  // Indices into `keys` in the order of each pair's first row. Pairs met together (a collective's)
  // are then handled together: their records share cache lines.
  std::vector<uint32_t> keys_by_first_row;
};

// Runs of rows on `threads` threads; the same result for any. The transfers stage numbers the
// pairs of each job from key_of_row, without a second hash lookup per record.
RowPairs NumberRowPairs(std::span<const EndpointId> src, std::span<const EndpointId> dst,
                        int threads = 1);

// Only the distinct pairs' keys (NumberRowPairs(...).keys).
std::vector<uint64_t> DistinctPairs(std::span<const EndpointId> src, std::span<const EndpointId> dst,
                                    int threads = 1);

inline uint64_t PairKey(EndpointId a, EndpointId b) {
  return a < b ? (uint64_t(a) << 32) | b : (uint64_t(b) << 32) | a;
}

}  // namespace prism::analysis
