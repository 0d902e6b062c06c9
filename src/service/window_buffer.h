// File: service/window_buffer.h
// Sliding analysis windows over a live record stream (`llmprism serve`). Records are kept in
// buckets of one step (by start time, epoch-aligned); a window is the `window_ns / step_ns` buckets
// before a step boundary. Event time drives it: the watermark is the latest record end seen minus
// the reorder allowance, and a window is due once the watermark passes its end, so records may
// arrive up to `reorder_ns` late (exporter active timeouts, several exporters) and still count.
// A record whose bucket no future window covers is late: dropped and counted. The buffer never
// holds more than `max_records` (beyond it records are dropped and counted), and buckets no future
// window needs are freed as soon as a window is taken.
//
// The first window is the whole window that starts with the first record's step, so no window is
// analysed half empty; after a gap in the data (no record for a whole window) windows
// start again the same way. Flush() (idle input, shutdown) makes the watermark the latest record
// end: the windows up to the one holding the latest data are then due (with less than a window
// of data, that one window).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "core/flow_record.h"

namespace prism::service {

struct WindowBufferOptions {
  int64_t window_ns = 60'000'000'000;
  int64_t step_ns = 10'000'000'000;    // window_ns must be a multiple of it
  int64_t reorder_ns = 5'000'000'000;  // how late (by end time) a record may come
  size_t max_records = 4'000'000;      // ~ 80 bytes each
};

struct Window {
  int64_t start_ns = 0, end_ns = 0;
  std::vector<FlowRecord> records;  // start_ns in [start_ns, end_ns), unsorted
};

class WindowBuffer {
 public:
  enum class AddResult { kAccepted, kLate, kFull };

  explicit WindowBuffer(const WindowBufferOptions& options);

  AddResult Add(const FlowRecord& r);
  // The next due window, if any (copies its records; frees buckets no later window needs).
  bool TakeDue(Window* out);
  // Makes every window that holds data due (the watermark jumps to the latest end seen).
  void Flush() { flush_ = true; }

  size_t size() const { return size_; }
  bool started() const { return started_; }
  int64_t max_end_ns() const { return max_end_ns_; }
  int64_t watermark_ns() const;
  int64_t next_end_ns() const { return next_end_ns_; }  // end of the next window to be taken

 private:
  int64_t Bucket(int64_t t_ns) const;

  WindowBufferOptions options_;
  std::map<int64_t, std::vector<FlowRecord>> buckets_;  // bucket index -> records
  size_t size_ = 0;
  bool started_ = false;
  bool flush_ = false;
  int64_t max_end_ns_ = INT64_MIN;
  int64_t next_end_ns_ = 0;
  int64_t last_taken_end_ns_ = INT64_MIN;
};

}  // namespace prism::service
