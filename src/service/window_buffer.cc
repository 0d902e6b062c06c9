#include "service/window_buffer.h"

#include <algorithm>

namespace prism::service {
namespace {

// Segments grow with their bucket (a bucket's next segment holds as many records as it already
// has), from 256 records (18 KB) to 65,536 (4.7 MB): little slack whatever the rate.
constexpr size_t kMinSegmentRecords = 256;
constexpr size_t kMaxSegmentRecords = 65536;

}  // namespace

WindowBuffer::WindowBuffer(const WindowBufferOptions& options,
                           std::shared_ptr<MemoryAccount> account)
    : options_(options), account_(account ? std::move(account) : std::make_shared<MemoryAccount>()) {
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

void WindowBuffer::FreeBucket(std::map<int64_t, StepBucket>::iterator it,
                              uint64_t* untaken_counter) {
  if (!it->second.taken && untaken_counter != nullptr) *untaken_counter += it->second.records;
  size_ -= it->second.records;
  buckets_.erase(it);  // the segments go when the last window sharing them is done
}

bool WindowBuffer::EvictOldestCovered() {
  if (buckets_.empty() || !buckets_.begin()->second.taken) return false;
  given_up_before_ = std::max(given_up_before_, buckets_.begin()->first + 1);
  FreeBucket(buckets_.begin(), nullptr);
  ++buckets_evicted_;
  return true;
}

void WindowBuffer::Anchor() {
  if (anchored_ || !started_) return;
  anchored_ = true;
  // First window: the whole window that starts with the earliest record's step (or the
  // service's, when this buffer's data starts within a window of it).
  int64_t first = min_start_ns_;
  const std::optional<int64_t> origin =
      options_.origin_ns ? options_.origin_ns() : std::optional<int64_t>();
  if (origin && *origin < first && first - *origin < options_.window_ns) first = *origin;
  next_end_ns_ = Bucket(first) * options_.step_ns + options_.window_ns;
  if (options_.list_empty_windows && origin && *origin <= min_start_ns_) {
    // A shard of a fabric stage whose data starts a window or more after the service's: the
    // first window of the grid that holds its data (one serve's windows go on from the origin),
    // not a whole window after its first record.
    next_end_ns_ = std::max(Bucket(*origin) * options_.step_ns + options_.window_ns,
                            (Bucket(min_start_ns_) + 1) * options_.step_ns);
  }
}

void WindowBuffer::ResumeAfter(int64_t committed_end_ns) {
  anchored_ = true;
  next_end_ns_ = committed_end_ns + options_.step_ns;
  last_taken_end_ns_ = committed_end_ns;
}

WindowBuffer::AddResult WindowBuffer::Add(const FlowRecord& r) {
  const int64_t b = Bucket(r.start_ns);
  started_ = true;
  // Until the reorder allowance of data has been seen, the first window is not placed: records
  // that arrive out of order at the very start would otherwise be late for it.
  if (!anchored_) {
    min_start_ns_ = std::min(min_start_ns_, r.start_ns);
    if (std::max(max_end_ns_, r.end_ns) - options_.reorder_ns >= min_start_ns_) Anchor();
  }
  const int64_t first_needed =
      anchored_ ? Bucket(next_end_ns_ - options_.window_ns) : INT64_MIN;
  if (b < first_needed) return AddResult::kLate;
  if (b < given_up_before_) return AddResult::kFull;  // its bucket was given up for memory
  auto it = buckets_.find(b);
  if (it == buckets_.end() || it->second.segments.back()->full()) {
    const size_t have = it == buckets_.end() ? 0 : it->second.records;
    const size_t capacity = std::clamp(have, kMinSegmentRecords, kMaxSegmentRecords);
    const int64_t need = static_cast<int64_t>(capacity * sizeof(BufferedRecord));
    if (options_.max_bytes > 0) {
      while (account_->bytes() + need > options_.max_bytes) {
        // Never this record's own bucket: evicting it would refuse the record all the same.
        if (!buckets_.empty() && buckets_.begin()->first < b && EvictOldestCovered()) continue;
        // Nothing analysed left to evict: the steps not yet analysed fill the budget. End the
        // next window early, at the start of the newest step, so that it is taken now and its
        // buckets can go; meanwhile the budget may be overrun by an eighth, then records are
        // refused (counted by the caller).
        const int64_t newest = std::max(b, buckets_.empty() ? b : buckets_.rbegin()->first);
        Anchor();
        if (!buckets_.empty() && buckets_.begin()->first < newest) {
          cut_end_ns_ = std::min(next_end_ns_, newest * options_.step_ns);
        }
        if (account_->bytes() + need <= options_.max_bytes + options_.max_bytes / 8) break;
        return AddResult::kFull;
      }
    }
    StepBucket& k = buckets_[b];
    k.segments.push_back(std::make_shared<RecordSegment>(capacity, account_));
    it = buckets_.find(b);
  }
  StepBucket& k = it->second;
  k.segments.back()->Push(r);
  ++k.records;
  ++size_;
  // Later windows hold it, but a window this buffer handed out covered its step without it.
  if (handed_out_end_ns_ != INT64_MIN && b < Bucket(handed_out_end_ns_) &&
      (analysed_elsewhere_end_ns_ == INT64_MIN || b >= Bucket(analysed_elsewhere_end_ns_))) {
    ++records_late_partial_;
  }
  max_end_ns_ = std::max(max_end_ns_, std::max(r.end_ns, r.start_ns));
  flush_ = false;  // new data: back to waiting out the reorder allowance
  return AddResult::kAccepted;
}

void WindowBuffer::ListEmpty(int64_t end_ns) {
  if (empty_ends_.size() < kMaxEmptyWindowsListed) {
    empty_ends_.push_back(end_ns);
    ++empty_windows_listed_;
  } else {
    ++empty_windows_unlisted_;
  }
}

std::vector<int64_t> WindowBuffer::TakeEmptyWindows() {
  int64_t lo = 0, hi = 0;
  // Only once every window holding data before them is taken: those carry the empties before
  // them themselves.
  if (empty_ends_.empty() || NextDue(&lo, &hi)) return {};
  std::vector<int64_t> ends = std::move(empty_ends_);
  empty_ends_.clear();
  last_taken_end_ns_ = std::max(last_taken_end_ns_, next_end_ns_ - options_.step_ns);
  handed_out_end_ns_ = last_taken_end_ns_;
  const int64_t keep_from = Bucket(next_end_ns_ - options_.window_ns);
  while (!buckets_.empty() && buckets_.begin()->first < keep_from) {
    FreeBucket(buckets_.begin(), &records_skipped_);
  }
  return ends;
}

bool WindowBuffer::NextDue(int64_t* lo_out, int64_t* hi_out) {
  if (!started_) return false;
  if (!anchored_) {
    if (!flush_ && watermark_ns() < min_start_ns_) return false;
    Anchor();
  }
  while (true) {
    bool cut = false;
    if (cut_end_ns_ != INT64_MIN) {
      // The budget is full of steps not yet analysed: this window ends early and is due now.
      if (cut_end_ns_ > last_taken_end_ns_ && cut_end_ns_ <= next_end_ns_) {
        next_end_ns_ = cut_end_ns_;
        cut = true;
      }
      cut_end_ns_ = INT64_MIN;
    }
    // The other shards' clock (MoveClockTo) passed this window: due, data or not.
    const bool clocked = options_.list_empty_windows && clock_ns_ >= next_end_ns_;
    if (cut || clocked) {
    } else if (flush_) {
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
    if (first == buckets_.end() && clocked) {
      // No record of this shard in this window nor after it, and the other shards are past it:
      // the windows up to the clock are empty here, passed (TakeEmptyWindows). Counted, not
      // walked, beyond what is listed (a clock gone far ahead).
      const int64_t n = (clock_ns_ - next_end_ns_) / options_.step_ns + 1;
      const int64_t listed = std::min<int64_t>(
          n, static_cast<int64_t>(kMaxEmptyWindowsListed - std::min(kMaxEmptyWindowsListed,
                                                                    empty_ends_.size())));
      for (int64_t i = 0; i < listed; ++i) ListEmpty(next_end_ns_ + i * options_.step_ns);
      empty_windows_unlisted_ += static_cast<uint64_t>(n - listed);
      next_end_ns_ += n * options_.step_ns;
      return false;
    }
    if (first == buckets_.end()) return false;
    if (first->first >= hi) {
      if (options_.list_empty_windows) {
        // A gap in this shard's data: the windows up to the first one holding data again are
        // empty here (every one ends before the data's step starts); listed, and windows go on
        // on the grid with the first one holding data.
        const int64_t resume_end = (first->first + 1) * options_.step_ns;
        for (int64_t e = next_end_ns_; e < resume_end; e += options_.step_ns) ListEmpty(e);
        next_end_ns_ = resume_end;
        continue;
      }
      // A gap in the data (a pause, or the service idled): skip the empty windows and start again
      // a whole window after the data resumes, as at the start.
      next_end_ns_ = std::max(next_end_ns_ + options_.step_ns,
                              (first->first + 1) * options_.step_ns + options_.window_ns -
                                  options_.step_ns);
      continue;
    }
    *lo_out = lo;
    *hi_out = hi;
    return true;
  }
}

bool WindowBuffer::TakeDue(Window* out, size_t max_lag_windows) {
  int64_t lo = 0, hi = 0;
  if (!NextDue(&lo, &hi)) return false;
  int64_t end_ns = next_end_ns_;
  next_end_ns_ = end_ns + options_.step_ns;
  if (max_lag_windows > 0) {
    // How many more are due behind this one? Nothing is freed while looking, so whichever is
    // taken still has all its buckets.
    const int64_t saved_next = next_end_ns_, saved_last = last_taken_end_ns_;
    const size_t saved_empty = empty_ends_.size();
    const uint64_t saved_listed = empty_windows_listed_, saved_unlisted = empty_windows_unlisted_;
    std::vector<std::pair<std::pair<int64_t, int64_t>, int64_t>> due{{{lo, hi}, end_ns}};
    int64_t l = 0, h = 0;
    last_taken_end_ns_ = end_ns;
    while (NextDue(&l, &h)) {
      due.push_back({{l, h}, next_end_ns_});
      last_taken_end_ns_ = next_end_ns_;
      next_end_ns_ += options_.step_ns;
    }
    if (due.size() - 1 > max_lag_windows) {
      // Analysis is more than that behind: the newest due window, the others skipped.
      windows_skipped_ += due.size() - 1;
      lo = due.back().first.first, hi = due.back().first.second, end_ns = due.back().second;
      next_end_ns_ = end_ns + options_.step_ns;
    } else {
      next_end_ns_ = saved_next;
    }
    last_taken_end_ns_ = saved_last;
    // Looking ahead lists no empty window (the ones before the window taken are listed already).
    empty_ends_.resize(saved_empty);
    empty_windows_listed_ = saved_listed;
    empty_windows_unlisted_ = saved_unlisted;
  }

  // The window's buckets, oldest dropped while it holds more records than its analysis may.
  lo = std::max(lo, given_up_before_);
  uint64_t records = 0;
  for (auto it = buckets_.lower_bound(lo); it != buckets_.end() && it->first < hi; ++it) {
    records += it->second.records;
  }
  if (options_.max_window_records > 0) {
    auto it = buckets_.lower_bound(lo);
    // One step is the least a window holds (a single bucket over the bound is analysed anyway).
    while (records > options_.max_window_records && it != buckets_.end() &&
           std::next(it) != buckets_.end() && std::next(it)->first < hi) {
      records -= it->second.records;
      if (it->second.taken) {
        ++buckets_evicted_;
      } else {
        records_given_up_ += it->second.records;  // no window covered it: lost, counted
      }
      given_up_before_ = std::max(given_up_before_, it->first + 1);
      lo = it->first + 1;
      auto next = std::next(it);
      FreeBucket(it, nullptr);
      it = next;
    }
  }
  out->end_ns = end_ns;
  out->nominal_start_ns = end_ns - options_.window_ns;
  out->start_ns = std::max(out->nominal_start_ns, lo * options_.step_ns);
  out->slices.clear();
  out->records = records;
  out->empty_before = std::move(empty_ends_);
  empty_ends_.clear();
  for (auto it = buckets_.lower_bound(lo); it != buckets_.end() && it->first < hi; ++it) {
    it->second.taken = true;
    for (const auto& seg : it->second.segments) out->slices.push_back({seg, seg->size()});
  }
  if (out->shortened()) ++windows_shortened_;
  last_taken_end_ns_ = end_ns;
  handed_out_end_ns_ = end_ns;
  // Free what no later window covers.
  const int64_t keep_from = Bucket(next_end_ns_ - options_.window_ns);
  while (!buckets_.empty() && buckets_.begin()->first < keep_from) {
    FreeBucket(buckets_.begin(), &records_skipped_);
  }
  return true;
}

}  // namespace prism::service
