#include "scaleout/stream_checkpoint.h"

#include <algorithm>

namespace prism::scaleout {

StreamCheckpoint::StreamCheckpoint(int64_t window_ns, int64_t step_ns, uint64_t first_sequence)
    : window_ns_(window_ns), step_ns_(std::max<int64_t>(1, step_ns)),
      next_sequence_(std::max<uint64_t>(1, first_sequence)) {}

int64_t StreamCheckpoint::LastWindowEnd(int64_t start_ns) const {
  int64_t bucket = start_ns / step_ns_;
  if (start_ns % step_ns_ < 0) --bucket;  // floor, as the window buffer's buckets
  return bucket * step_ns_ + window_ns_;
}

void StreamCheckpoint::Read(uint64_t sequence, bool has_records, int64_t latest_start_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (has_records) open_[sequence] = LastWindowEnd(latest_start_ns);
  next_sequence_ = std::max(next_sequence_, sequence + 1);
}

uint64_t StreamCheckpoint::ResumeSequence(int64_t committed_end_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(open_, [&](const auto& m) { return m.second <= committed_end_ns; });
  return open_.empty() ? next_sequence_ : open_.begin()->first;
}

size_t StreamCheckpoint::open_messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_.size();
}

}  // namespace prism::scaleout
