// File: pipeline/ipfix_read_on_threads.h
// `analyze --threads N` reading one IPFIX file on N threads: the file cut into runs of whole
// messages (io/ipfix_file_runs.h), the first run decoded into the caller's sink chain and each
// later run (with the same duration filter, its own point names, endpoint ids and counters)
// straight into the table's columns past the room the runs before it may fill, a bound on their
// records (flow::FlowTableTail); then the later runs appended in run order, their rows moved down
// and their endpoints and points mapped to the caller's ids (flow::FlowTable::AppendTail). The
// table, the points, every counter and every line on stderr are those of reading the file in one
// pass. Sits between io and `analyze`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"
#include "flow/flow_table.h"

namespace prism::pipeline {

// Reads `path` on up to `threads` threads: its first run into `sink`, which must end in `table`
// (through filters that drop records of implausible duration, as pipeline::DurationFilter with
// `max_record_ns` does), the later runs appended to `table` after it. Returns the records
// delivered, or nullopt when the file is to be read in one pass (PlanIpfixFileRuns), before
// anything was read. `min_run_bytes`: the smallest run worth a thread (tests cut small files).
StatusOr<std::optional<uint64_t>> ReadIpfixFileOnThreads(const std::string& path, int threads,
                                                         FlowSink* sink, flow::FlowTable* table,
                                                         int64_t max_record_ns, PointTable* points,
                                                         Stats* stats,
                                                         uint64_t min_run_bytes = 4 << 20);

}  // namespace prism::pipeline
