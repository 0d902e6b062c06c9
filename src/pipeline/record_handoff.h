// File: pipeline/record_handoff.h
// The read stage on two threads: a FlowSink that hands the records it receives to a second thread
// in batches, in order, where the inner sink (the flow table: endpoints interned, columns appended)
// takes them while the reader decodes the next ones. The inner sink sees exactly the records it
// would have seen, in the same order, so the table is the same. Used by `analyze --threads` > 1.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/flow_record.h"

namespace prism::pipeline {

class RecordHandOff : public FlowSink {
 public:
  // `inner` is used only by the hand-off's thread until Finish() returns.
  explicit RecordHandOff(FlowSink* inner);
  ~RecordHandOff() override;
  RecordHandOff(const RecordHandOff&) = delete;
  RecordHandOff& operator=(const RecordHandOff&) = delete;

  void OnRecord(const FlowRecord& record) override;
  // Hands over what is buffered and waits until the inner sink has taken every record.
  void Finish();

 private:
  // Records per batch: large enough that the lock is taken rarely, small enough to stay in the
  // cache (4,096 records of 80 bytes), a few batches in flight at most.
  static constexpr size_t kBatchRecords = 4096;
  static constexpr size_t kMaxBatchesInFlight = 4;

  void HandOver();
  void Run();

  FlowSink* inner_;
  std::vector<FlowRecord> filling_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<FlowRecord>> full_;   // handed over, in order
  std::vector<std::vector<FlowRecord>> spare_; // taken, to be filled again (no fresh pages)
  bool done_ = false;
  std::thread worker_;
};

}  // namespace prism::pipeline
