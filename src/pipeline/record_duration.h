// File: pipeline/record_duration.h
// The longest a flow record may plausibly last, one definition for `analyze` (records read from
// files, filtered here) and `serve` (service/clock_guard.h, which refuses the same records as
// implausible_time). A record that ends before it starts, or claims to last longer than any
// transfer of a training step does — a start of 0 or -5 from an exporter that lost its clock, a
// corrupt end time — is not a transfer the analysis can place: its span would stretch the
// window's time axis and everything sized by it. It is counted (record_bad_duration) and skipped
// as the records are read, before the window cut. Sits between the input readers and the windows.
#pragma once

#include <cstdint>

#include "core/flow_record.h"
#include "core/record_batch.h"
#include "core/stats.h"

namespace prism::pipeline {

// An hour: far above any collective or flowlet, and far below the years a bad clock claims.
inline constexpr double kDefaultMaxRecordS = 3600;
inline constexpr int64_t kDefaultMaxRecordNs = 3'600'000'000'000;

// end >= start and end - start <= max_record_ns, without overflow for any int64 times.
inline bool PlausibleDuration(int64_t start_ns, int64_t end_ns, int64_t max_record_ns) {
  if (end_ns < start_ns) return false;
  const uint64_t span = static_cast<uint64_t>(end_ns) - static_cast<uint64_t>(start_ns);
  return span <= static_cast<uint64_t>(max_record_ns);
}
inline bool PlausibleDuration(const FlowRecord& r, int64_t max_record_ns) {
  return PlausibleDuration(r.start_ns, r.end_ns, max_record_ns);
}

// Passes records of plausible duration to `inner`; counts the others as record_bad_duration.
class DurationFilter : public FlowSink, public BatchSink {
 public:
  DurationFilter(FlowSink* inner, int64_t max_record_ns, Stats* stats)
      : inner_(inner), inner_batches_(BatchSideOf(inner)), max_record_ns_(max_record_ns),
        stats_(stats) {}

  void OnRecord(const FlowRecord& r) override {
    if (!PlausibleDuration(r, max_record_ns_)) {
      stats_->Add(Stat::record_bad_duration);
      return;
    }
    inner_->OnRecord(r);
  }
  bool TakesBatches() const override { return inner_batches_ != nullptr; }
  // The same test per row; the implausible rows are dropped from the batch in place.
  void OnBatch(RecordBatch* batch) override {
    const size_t dropped = batch->RemoveIf([&](size_t i) {
      return !PlausibleDuration(batch->start_ns[i], batch->end_ns[i], max_record_ns_);
    });
    if (dropped > 0) stats_->Add(Stat::record_bad_duration, dropped);
    if (batch->size > 0) inner_batches_->OnBatch(batch);
  }

 private:
  FlowSink* inner_;
  BatchSink* inner_batches_;  // null: `inner` takes records one by one
  int64_t max_record_ns_;
  Stats* stats_;
};

}  // namespace prism::pipeline
