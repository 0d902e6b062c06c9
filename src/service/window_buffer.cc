#include "service/window_buffer.h"

#include <algorithm>

namespace prism::service {

WindowBuffer::WindowBuffer(const WindowBufferOptions& options) : options_(options) {
  if (options_.step_ns <= 0) options_.step_ns = 1;
  if (options_.window_ns < options_.step_ns) options_.window_ns = options_.step_ns;
  options_.window_ns -= options_.window_ns % options_.step_ns;
}

int64_t WindowBuffer::Bucket(int64_t t_ns) const {
  // Floor division (times before 1970 are not expected, but stay correct).
  int64_t q = t_ns / options_.step_ns;
  if (t_ns % options_.step_ns < 0) --q;
  return q;
}

int64_t WindowBuffer::watermark_ns() const {
  if (!started_) return INT64_MIN;
  return flush_ ? max_end_ns_ : max_end_ns_ - options_.reorder_ns;
}

WindowBuffer::AddResult WindowBuffer::Add(const FlowRecord& r) {
  const int64_t b = Bucket(r.start_ns);
  if (!started_) {
    started_ = true;
    // First window: the whole window that starts with this record's step.
    next_end_ns_ = b * options_.step_ns + options_.window_ns;
  }
  const int64_t first_needed = Bucket(next_end_ns_ - options_.window_ns);
  if (b < first_needed) return AddResult::kLate;
  if (size_ >= options_.max_records) return AddResult::kFull;
  buckets_[b].push_back(r);
  ++size_;
  max_end_ns_ = std::max(max_end_ns_, std::max(r.end_ns, r.start_ns));
  flush_ = false;  // new data: back to waiting out the reorder allowance
  return AddResult::kAccepted;
}

bool WindowBuffer::TakeDue(Window* out) {
  if (!started_) return false;
  while (true) {
    if (flush_) {
      // Due while the window's last step starts at or before the latest data seen, or while the
      // latest data is in no window taken yet (less than a window of data: analyse what there is).
      if (next_end_ns_ - options_.step_ns > max_end_ns_ && last_taken_end_ns_ > max_end_ns_) {
        return false;
      }
    } else if (watermark_ns() < next_end_ns_) {
      return false;
    }
    const int64_t lo = Bucket(next_end_ns_ - options_.window_ns), hi = Bucket(next_end_ns_);
    auto first = buckets_.lower_bound(lo);
    if (first == buckets_.end()) return false;
    if (first->first >= hi) {
      // A gap in the data (a pause, or the service idled): skip the empty windows and start again
      // a whole window after the data resumes, as at the start.
      next_end_ns_ = std::max(next_end_ns_ + options_.step_ns,
                              (first->first + 1) * options_.step_ns + options_.window_ns -
                                  options_.step_ns);
      continue;
    }
    out->start_ns = next_end_ns_ - options_.window_ns;
    out->end_ns = next_end_ns_;
    out->records.clear();
    for (auto it = first; it != buckets_.end() && it->first < hi; ++it) {
      out->records.insert(out->records.end(), it->second.begin(), it->second.end());
    }
    last_taken_end_ns_ = next_end_ns_;
    next_end_ns_ += options_.step_ns;
    // Free what no later window covers.
    const int64_t keep_from = Bucket(next_end_ns_ - options_.window_ns);
    while (!buckets_.empty() && buckets_.begin()->first < keep_from) {
      size_ -= buckets_.begin()->second.size();
      buckets_.erase(buckets_.begin());
    }
    return true;
  }
}

}  // namespace prism::service
