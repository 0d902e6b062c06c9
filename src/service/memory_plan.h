// File: service/memory_plan.h
// How `llmprism serve` divides its memory budget (`--memory-limit`; by default half of what the
// machine or its cgroup has available at start) between the fixed parts (queues, the process and
// its state) and the two parts that grow with the record rate: the window buffer, which holds
// window + step + reorder seconds of records (72 bytes each, service/record_segment.h), and the
// analysis of one window (~kAnalysisBytesPerRecord of its records at its peak). The split is the
// one that lets both hold a whole window at the same record rate; when the rate outgrows it, the
// window buffer shortens windows (service/window_buffer.h) and the plan says at what rate that
// starts (docs/api.md, "Memory"). Sits before service/service.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace prism::service {

// Peak bytes per record of a window while it is analysed: the columns and the analysis's own
// peak (docs/performance.md: <= 64 B/record), plus the window's report and dashboard document and
// the allocator's slack, measured on `serve` (docs/api.md, "Memory").
inline constexpr int64_t kAnalysisBytesPerRecord = 96;
// What the process needs besides the queues and the records: code, HTTP threads, SQLite's cache,
// the tracker's jobs, findings and GPU timelines (bounded by their caps), a snapshot being served.
inline constexpr int64_t kStateReserveBytes = 256ll << 20;

struct MemoryPlan {
  int64_t limit_bytes = 0;
  int64_t reserve_bytes = 0;   // queues + state
  int64_t buffer_bytes = 0;    // WindowBufferOptions::max_bytes
  uint64_t window_records = 0;  // WindowBufferOptions::max_window_records
  // Records per second of event time up to which a whole window fits.
  double whole_window_rate = 0;
  std::string Describe() const;  // one line for the log
};

struct MemoryPlanInputs {
  int64_t limit_bytes = 0;
  int64_t window_ns = 0, step_ns = 0, reorder_ns = 0;
  size_t queue_records = 0;       // record queue capacity
  size_t udp_collectors = 0;
  size_t udp_queue_datagrams = 0;  // per collector
};

// kInvalidArgument when the limit cannot hold the fixed parts and one step of records.
StatusOr<MemoryPlan> PlanMemory(const MemoryPlanInputs& in);

// The default limit: half of the memory available to this process now — /proc/meminfo's
// MemAvailable, or the cgroup's limit minus its usage when that is lower (cgroup v2 memory.max,
// v1 memory.limit_in_bytes). 0 if neither can be read. `why` says where the figure came from.
int64_t DefaultMemoryLimit(std::string* why = nullptr);

// "4G", "512M", "1500000000", "2.5GiB": bytes (K/M/G/T are powers of 1024, as in free(1)).
StatusOr<int64_t> ParseByteSize(const std::string& text);

}  // namespace prism::service
