// File: bench/bench_data.h
// Synthetic inputs for the micro-benchmarks (docs/performance.md), seeded so every run measures
// the same work: the log idle-time series the step segmenter feeds BOCD, and flow records of
// ring-all-reduce jobs (DP pairs exchanging one bucket size per step, bursts separated by the
// step's compute gap), the shape the simulator and real collectives produce.
#pragma once

#include <cstdint>
#include <vector>

#include "core/flow_record.h"
#include "core/name_table.h"

namespace prism::bench {

// Log idle times (ns) between the transfers of one pair: bursts of 5..60 transfers with idle
// times around 20 us (many clamped to the 1 us floor) separated by step gaps of 5..50 ms.
std::vector<double> PipelineIntervalSeries(size_t n, uint64_t seed);

// The same series as (start_ns, end_ns) transfer times, for FindBursts / SegmentSteps.
void PipelineTransferTimes(size_t n, uint64_t seed, std::vector<int64_t>* start_ns,
                           std::vector<int64_t>* end_ns);

// Records of `jobs` jobs of `gpus_per_job` GPUs (8 per host), each a ring: every GPU sends to the
// next one `steps` times, 4 buckets per step, records of 1 MB, seen at one of `num_switches`
// switches (8: spine0..7; more: leaf-p000-r0 and on, as the simulator names a large fabric's
// leaves), by the GPU's number plus its bucket. Sorted by start. Addresses are 10.x.y.z, host =
// GPU / 8.
std::vector<FlowRecord> RingJobRecords(int jobs, int gpus_per_job, int steps, PointTable* points,
                                      int num_switches = 8);

}  // namespace prism::bench
