// File: service/record_queue.h
// The hand-off between ingest threads and the window thread of `llmprism serve`: a queue of
// record batches (each from one source) with a fixed capacity in records. A live source (UDP)
// offers with TryPush and, when the queue is full, the batch is dropped and counted by the caller
// (llmprism_records_dropped_total{reason="queue_full"}); a file source, which can wait, uses Push
// and blocks until there is room. Memory is bounded by capacity x sizeof(FlowRecord) whatever the
// input rate.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "core/flow_record.h"

namespace prism::service {

struct RecordBatch {
  size_t source = 0;  // index into the service's sources
  std::vector<FlowRecord> records;
};

class RecordQueue {
 public:
  explicit RecordQueue(size_t capacity_records) : capacity_(capacity_records) {}

  // False (and `batch` untouched) when the batch does not fit or the queue is closed.
  bool TryPush(RecordBatch& batch) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_ || size_ + batch.records.size() > capacity_) return false;
      size_ += batch.records.size();
      queue_.push_back(std::move(batch));
    }
    batch.records.clear();
    cv_.notify_all();
    return true;
  }

  // Blocks until the batch fits (a batch larger than the capacity waits for an empty queue).
  // False when the queue was closed.
  bool Push(RecordBatch& batch) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      room_.wait(lock, [&] {
        return closed_ || size_ + batch.records.size() <= capacity_ || size_ == 0;
      });
      if (closed_) return false;
      size_ += batch.records.size();
      queue_.push_back(std::move(batch));
    }
    batch.records.clear();
    cv_.notify_all();
    return true;
  }

  // Waits up to `wait` for data, then moves every queued batch into `out`. Returns the number of
  // records taken.
  size_t PopAll(std::chrono::milliseconds wait, std::deque<RecordBatch>* out) {
    size_t n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, wait, [&] { return closed_ || !queue_.empty(); });
      n = size_;
      size_ = 0;
      for (auto& b : queue_) out->push_back(std::move(b));
      queue_.clear();
    }
    room_.notify_all();
    return n;
  }

  // Wakes every waiter; later pushes fail. Batches already queued can still be popped.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
    room_.notify_all();
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return size_;
  }
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_, room_;
  std::deque<RecordBatch> queue_;
  size_t size_ = 0;
  bool closed_ = false;
};

}  // namespace prism::service
