// File: service/window_buffer.h
// Sliding analysis windows over a live record stream (`llmprism serve`). Records are kept in
// buckets of one step (by start time, epoch-aligned; service/record_segment.h); a window is the
// `window_ns / step_ns` buckets before a step boundary and shares their segments (no copy). Event
// time drives it: the watermark is the latest record end seen minus the reorder allowance, and a
// window is due once the watermark passes its end, so records may arrive up to `reorder_ns` late
// (exporter active timeouts, several exporters) and still count. A record whose bucket no future
// window covers is late: dropped and counted. Buckets no future window needs are freed as soon as
// a window is taken.
//
// The first window is the whole window that starts with the step of the earliest record seen
// while the first reorder allowance of data arrived (records out of order at the very start are
// not late), so no window is analysed half empty; after a gap in the data (no record for a whole
// window) windows start again with the data. Flush() (idle input, shutdown) makes the watermark the latest record end: the
// windows up to the one holding the latest data are then due (with less than a window of data,
// that one window).
//
// Memory by budget, not by record count (docs/api.md, "Memory"). `max_bytes` bounds the bytes of
// every segment alive (the MemoryAccount: this buffer's and those of windows still being
// analysed); `max_window_records` bounds the records of one window (what its analysis may hold).
// When the input outgrows them, windows get shorter, never silently emptier:
//   - a record that needs memory beyond `max_bytes` first evicts the oldest bucket that a taken
//     window has already covered (later windows then start later: shorter windows);
//   - a window with more than `max_window_records` starts later (its oldest buckets are dropped
//     from it, and given up if no window covered them: their records count as lost);
//   - when nothing covered is left to evict (the steps not yet analysed fill the budget), the
//     next window ends early, at the start of the newest step, and is due at once (records may
//     overrun the budget by an eighth until it is taken);
//   - only beyond that (one step's records alone outgrow the budget, or analysis cannot take the
//     early window) is a record refused (kFull, counted as buffer_full);
// and every window says how it was cut (Window::nominal_start_ns, shortened).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <vector>

#include "core/flow_record.h"
#include "service/record_segment.h"

namespace prism::service {

struct WindowBufferOptions {
  int64_t window_ns = 60'000'000'000;
  int64_t step_ns = 10'000'000'000;    // window_ns must be a multiple of it
  int64_t reorder_ns = 5'000'000'000;  // how late (by end time) a record may come
  int64_t max_bytes = 0;               // of segments alive (MemoryAccount); 0 = unbounded
  uint64_t max_window_records = 0;     // records per window; 0 = unbounded
  // An analyser of one shard: where the data of the whole service starts (scaleout/shard_map.h
  // kWindowOriginKey), asked when the first window is placed; none: unknown. The first window
  // then starts with that step if it is less than a window before this buffer's own earliest
  // record, as one serve given every shard's records would have placed it.
  std::function<std::optional<int64_t>()> origin_ns;
  // An analyser of one shard with a fabric stage (serve --fabric-stage): after a gap in this
  // shard's data, windows go on on the service's grid with the first window holding data (the
  // window one serve, given every shard's records, would analyse: other shards' data fill the
  // gap), not a whole window after the data resumes; and the windows passed with no record of
  // this shard are listed (Window::empty_before) so that their empty contributions can be
  // published before the next window is committed. Its first window too, when its data starts a
  // window or more after `origin_ns`, is the first of the grid holding data (the windows before
  // it are not listed: the service may have run for weeks).
  bool list_empty_windows = false;
};

// At most this many empty windows are listed before one taken window (a gap of a day is 8,640
// windows stepping by 10 s); those beyond are counted (WindowBuffer::empty_windows_unlisted).
inline constexpr size_t kMaxEmptyWindowsListed = 10'000;

struct Window {
  int64_t start_ns = 0, end_ns = 0;  // the interval analysed
  int64_t nominal_start_ns = 0;      // end_ns - window length; < start_ns when shortened
  std::vector<WindowSlice> slices;
  uint64_t records = 0;
  // WindowBufferOptions::list_empty_windows: the ends of the windows before this one that held
  // no record (oldest first), passed since the window taken before.
  std::vector<int64_t> empty_before;
  // Shards taken by lease: true for a source address whose shard was lost since its records were
  // read (service/held_shards.h). Its records are left out of the analysis (the shard's new
  // holder analyses them; `records` then counts the others) and its jobs are handed over, not
  // ended. Empty: none.
  std::function<bool(const IpAddr&)> left_to_another_holder;

  bool shortened() const { return start_ns > nominal_start_ns; }
  template <typename F>
  void ForEach(F&& f) const {
    for (const WindowSlice& s : slices) {
      for (const BufferedRecord& r : s.segment->First(s.count)) f(r);
    }
  }
};

class WindowBuffer {
 public:
  enum class AddResult { kAccepted, kLate, kFull };

  // `account` counts the bytes of this buffer's segments (shared with the windows it hands out);
  // a fresh one when null.
  explicit WindowBuffer(const WindowBufferOptions& options,
                        std::shared_ptr<MemoryAccount> account = nullptr);

  AddResult Add(const FlowRecord& r);
  // The next due window, if any, oldest first (frees buckets no later window needs). With
  // `max_lag_windows` > 0, when more than that many further windows are due (analysis fell that
  // far behind), returns the newest due one and skips the others (counted: windows_skipped;
  // records no taken window then covers: records_skipped).
  bool TakeDue(Window* out, size_t max_lag_windows = 0);
  // Makes every window that holds data due (the watermark jumps to the latest end seen).
  void Flush() { flush_ = true; }
  // WindowBufferOptions::list_empty_windows, an analyser caught up on its subject with no record
  // for its idle flush: the other shards of the fabric stage have published windows up to
  // `clock_ns` (a window end of the grid). The windows ending there or before are due whatever
  // this buffer's own watermark: those holding records of this shard are taken as any window,
  // those after its latest records are passed empty (TakeEmptyWindows). A record of a window
  // passed so arriving later is late (dropped or counted late_partial), as in one serve whose
  // clock other shards' records moved. Never moves back.
  void MoveClockTo(int64_t clock_ns) { clock_ns_ = std::max(clock_ns_, clock_ns); }
  // The ends of the windows passed empty (oldest first) that no taken window carries
  // (Window::empty_before) because no window holding data is due after them yet: the clock moved
  // past this shard's latest records, or its records resumed after a gap and their first window
  // waits for its watermark. Only once every window holding data before them is taken. They
  // count as handed out (see MoveClockTo).
  std::vector<int64_t> TakeEmptyWindows();
  // Before any record: the windows up to `committed_end_ns` were analysed by an earlier process
  // (serve --role analyser, scaleout/stream_checkpoint.h). Windows go on one step later, on the
  // same grid, and a flush takes no window the earlier process would not have taken.
  void ResumeAfter(int64_t committed_end_ns);
  size_t size() const { return size_; }  // records held
  int64_t bytes() const { return account_->bytes(); }
  const std::shared_ptr<MemoryAccount>& account() const { return account_; }
  bool started() const { return started_; }
  bool anchored() const { return anchored_; }  // the first window is placed
  int64_t max_end_ns() const { return max_end_ns_; }
  int64_t watermark_ns() const;
  int64_t next_end_ns() const { return next_end_ns_; }  // end of the next window to be taken
  int64_t clock_ns() const { return clock_ns_; }  // MoveClockTo's, INT64_MIN when none
  const WindowBufferOptions& options() const { return options_; }

  // Degradation, cumulative: buckets evicted for memory after a window covered them (later
  // windows shortened), windows taken shorter than configured, records given up without any
  // window covering them (memory), windows skipped and the records only they held.
  uint64_t buckets_evicted() const { return buckets_evicted_; }
  uint64_t windows_shortened() const { return windows_shortened_; }
  uint64_t records_given_up() const { return records_given_up_; }
  uint64_t windows_skipped() const { return windows_skipped_; }
  uint64_t records_skipped() const { return records_skipped_; }
  // Records accepted for later windows whose step a window already handed out covered: that
  // window was analysed without them (they came later than the reorder allowance for it, but in
  // time for the next ones). Not dropped, yet missing from an analysis: counted, never silent.
  uint64_t records_late_partial() const { return records_late_partial_; }
  // WindowBufferOptions::list_empty_windows: windows passed with no record, listed and not
  // (beyond kMaxEmptyWindowsListed in one gap).
  uint64_t empty_windows_listed() const { return empty_windows_listed_; }
  uint64_t empty_windows_unlisted() const { return empty_windows_unlisted_; }
  // Windows up to `end_ns` were analysed by another process with the records about to be read
  // again (a shard taken over): those records are not counted as missed by this buffer's windows.
  void NoteAnalysedElsewhere(int64_t end_ns) {
    analysed_elsewhere_end_ns_ = std::max(analysed_elsewhere_end_ns_, end_ns);
  }

 private:
  struct StepBucket {
    std::vector<std::shared_ptr<RecordSegment>> segments;
    size_t records = 0;
    bool taken = false;  // part of a window handed out
  };
  int64_t Bucket(int64_t t_ns) const;
  bool EvictOldestCovered();
  void FreeBucket(std::map<int64_t, StepBucket>::iterator it, uint64_t* untaken_counter);
  // The due window [lo, hi) buckets; false when none is due.
  bool NextDue(int64_t* lo, int64_t* hi);
  void Anchor();
  void ListEmpty(int64_t end_ns);  // a window passed with no record (list_empty_windows)

  WindowBufferOptions options_;
  std::shared_ptr<MemoryAccount> account_;
  std::map<int64_t, StepBucket> buckets_;  // bucket index -> records
  size_t size_ = 0;
  bool started_ = false;
  bool anchored_ = false;
  int64_t min_start_ns_ = INT64_MAX;  // until anchored
  bool flush_ = false;
  int64_t max_end_ns_ = INT64_MIN;
  int64_t next_end_ns_ = 0;
  int64_t last_taken_end_ns_ = INT64_MIN;
  int64_t given_up_before_ = INT64_MIN;  // buckets below this were given up for memory
  int64_t cut_end_ns_ = INT64_MIN;       // the budget asks for a window ending here, now
  uint64_t buckets_evicted_ = 0, windows_shortened_ = 0, records_given_up_ = 0;
  uint64_t windows_skipped_ = 0, records_skipped_ = 0, records_late_partial_ = 0;
  std::vector<int64_t> empty_ends_;  // passed since the last window taken (list_empty_windows)
  uint64_t empty_windows_listed_ = 0, empty_windows_unlisted_ = 0;
  // End of the last window this buffer handed out (not a resumed process's committed end: the
  // windows before it held every record the stream had).
  int64_t handed_out_end_ns_ = INT64_MIN;
  int64_t analysed_elsewhere_end_ns_ = INT64_MIN;
  int64_t clock_ns_ = INT64_MIN;  // MoveClockTo
};

}  // namespace prism::service
