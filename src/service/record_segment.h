// File: service/record_segment.h
// How `llmprism serve` holds live records between ingest and analysis: in append-only segments of
// BufferedRecord (the fields analysis reads — flow::FlowTable's columns — and nothing else: 72
// bytes instead of a FlowRecord's 88), whose bytes are counted in one MemoryAccount wherever they
// are (the window buffer, a window waiting for or in analysis). A window shares the segments of
// its buckets with the buffer instead of copying them (WindowSlice: a segment and how many of its
// records belong to the window); the window thread may keep appending to a shared segment, since
// readers only read the records that were there when the window was taken (the hand-off through
// the service's mutex orders those writes before the reads). Sits before service/window_buffer.h.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/flow_record.h"
#include "core/ip_addr.h"

namespace prism::service {

struct BufferedRecord {
  int64_t start_ns = 0, end_ns = 0;
  IpAddr src, dst;
  uint64_t bytes = 0;
  uint32_t qp = 0;
  PointId point = kNoPoint;
  uint32_t sampling_rate = 1;

  static BufferedRecord From(const FlowRecord& r) {
    return {r.start_ns, r.end_ns, r.src, r.dst, r.bytes, r.qp, r.point, r.sampling_rate};
  }
  FlowRecord ToFlowRecord() const {
    FlowRecord r;
    r.start_ns = start_ns;
    r.end_ns = end_ns;
    r.src = src;
    r.dst = dst;
    r.bytes = bytes;
    r.qp = qp;
    r.point = point;
    r.sampling_rate = sampling_rate;
    return r;
  }
};

// Bytes of every segment alive, wherever it is; read by any thread.
class MemoryAccount {
 public:
  void Add(int64_t bytes) { bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> bytes_{0};
};

class RecordSegment {
 public:
  RecordSegment(size_t capacity, std::shared_ptr<MemoryAccount> account)
      : data_(static_cast<BufferedRecord*>(::operator new(capacity * sizeof(BufferedRecord)))),
        capacity_(capacity),
        account_(std::move(account)) {
    if (account_) account_->Add(bytes());
  }
  ~RecordSegment() {
    ::operator delete(data_);
    if (account_) account_->Add(-bytes());
  }
  RecordSegment(const RecordSegment&) = delete;
  RecordSegment& operator=(const RecordSegment&) = delete;

  size_t size() const { return size_.load(std::memory_order_relaxed); }
  size_t capacity() const { return capacity_; }
  bool full() const { return size() == capacity_; }
  int64_t bytes() const { return static_cast<int64_t>(capacity_ * sizeof(BufferedRecord)); }

  // Window thread only; not full.
  void Push(const FlowRecord& r) {
    const size_t n = size();
    std::construct_at(data_ + n, BufferedRecord::From(r));  // trivially destructible
    size_.store(n + 1, std::memory_order_release);
  }
  std::span<const BufferedRecord> First(size_t n) const { return {data_, n}; }

 private:
  BufferedRecord* data_;  // raw storage: pages are touched only as records arrive
  size_t capacity_;
  std::atomic<size_t> size_{0};
  std::shared_ptr<MemoryAccount> account_;
};

// A window's share of one segment: its first `count` records.
struct WindowSlice {
  std::shared_ptr<const RecordSegment> segment;
  size_t count = 0;
};

}  // namespace prism::service
