// File: flow/flow_table.h
// Append-only columnar store of the records of one analysis window, with endpoints interned to
// dense ids. Sources write into it through FlowSink; analysis reads the columns. Rows are sorted
// by start time once loading is done (SortByStart), so every later stage can scan in time order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/big_blocks.h"
#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/record_batch.h"
#include "flow/endpoint_cache.h"
#include "flow/flow_table_tail.h"
#include "flow/lazy_column.h"

namespace prism::flow {

using RowId = uint32_t;

class FlowTable : public FlowSink, public BatchSink {
 public:
  void OnRecord(const FlowRecord& r) override;
  // Appends rows [0, batch->size), endpoints interned in row order (source, then destination),
  // exactly as OnRecord would one by one.
  void OnBatch(RecordBatch* batch) override;
  void Reserve(size_t rows);
  // Gives back to the system the pages of each column's capacity past its rows (after the last
  // append: a reservation sized by an estimate leaves them unused, and in a huge page the
  // untouched rest of the last one is resident all the same).
  void ReleaseUnusedCapacity();
  // Room for the records that follow this table's, read apart on other threads (the later runs
  // of a file: pipeline/ipfix_read_on_threads.h): from now on the table itself takes at most
  // `own_rows` more rows (checked), and tail k, which may fill on another thread meanwhile, at
  // most tail_rows[k], straight into the capacity past them (reserved here; pages are touched only
  // as rows arrive). The tails are then appended in order with AppendTail.
  std::vector<FlowTableTail> MakeTails(size_t own_rows, std::span<const size_t> tail_rows);
  // Appends the rows of `tail` (the next one MakeTails made) with endpoints interned in the tail's
  // id order, which is its row order: the table that appending those records one by one would
  // give. `point_of` maps the tail's point ids to this table's (kNoPoint stays). The rows move
  // down to the end of the table within the columns (the gap left by the room the table did not
  // use), on two threads when `threads` > 1. After the last tail the table takes rows without
  // bound again, and the pages the tails touched past its end go back to the system.
  void AppendTail(FlowTableTail&& tail, std::span<const PointId> point_of, int threads = 1);
  // Sorts every column by (start_ns, end_ns, src, dst); stable for equal keys. `threads` > 1
  // runs the passes over the rows and the columns' moves in parallel (same result).
  void SortByStart(int threads = 1);
  // Rows [lo, hi) as a table of their own, endpoints interned in row order (ids are per table).
  FlowTable CopyRows(size_t lo, size_t hi) const;
  // Keeps only rows [lo, hi), in place, endpoints re-interned in row order: the table
  // CopyRows(lo, hi) would return, without a second copy of the columns (the last window).
  // `threads` > 1 runs its passes over the rows in parallel (same result).
  void KeepRows(size_t lo, size_t hi, int threads = 1);

  // Frees the columns only transfer building reads (qp, and sampling_rate when no record is
  // sampled: EstimatedBytes needs it otherwise): afterwards CopyRows / KeepRows / SortByStart
  // must not be called.
  void ReleaseTransferColumns();
  bool has_transfer_columns() const { return qp_.size() == start_ns_.size(); }

  size_t size() const { return start_ns_.size(); }
  bool empty() const { return start_ns_.empty(); }

  std::span<const int64_t> start_ns() const { return start_ns_; }
  // A record's end: its start plus its duration, held as two 32-bit columns, the high one only
  // once a record lasts 4.3 s or more or ends before it starts (flow/lazy_column.h).
  int64_t EndNs(size_t r) const { return EndOf(start_ns_[r], DurationNs(r)); }
  uint64_t DurationNs(size_t r) const {  // end - start modulo 2^64
    return duration_high_.empty() ? duration_low_[r]
                                  : uint64_t{duration_high_[r]} << 32 | duration_low_[r];
  }
  std::span<const uint32_t> duration_low() const { return duration_low_; }
  std::span<const uint32_t> duration_high() const { return duration_high_; }  // empty: all short
  std::span<const EndpointId> src() const { return src_; }
  std::span<const EndpointId> dst() const { return dst_; }
  // A record's bytes as reported (not scaled by sampling: EstimatedBytes). Held as two columns of
  // 32 bits, the high one only once a record holds 4 GiB or more (flow/lazy_column.h).
  uint64_t Bytes(size_t r) const {
    return bytes_high_.empty() ? bytes_low_[r] : uint64_t{bytes_high_[r]} << 32 | bytes_low_[r];
  }
  std::span<const uint32_t> bytes_low() const { return bytes_low_; }
  std::span<const uint32_t> bytes_high() const { return bytes_high_; }  // empty: all below 4 GiB
  std::span<const uint32_t> qp() const { return qp_; }
  std::span<const PointId> point() const { return point_; }
  // Empty when no record is sampled (flow/lazy_column.h); SamplingRate reads either way.
  std::span<const uint32_t> sampling_rate() const { return sampling_rate_; }
  uint32_t SamplingRate(size_t r) const { return LazyAt<uint32_t>(sampling_rate_, r, 1); }
  // The bytes of the traffic record `r` stands for: a 1-in-N sampled record (sFlow, sampled
  // IPFIX) carries the bytes of its samples and stands for N times them. Wherever bytes are set
  // against time (rates, paces, offered load) this is the figure; thresholds on what a record
  // holds (the 4 KiB control test) use Bytes(). Valid after ReleaseTransferColumns.
  // Asks for the columns a per-record pass reads of row `r` (start, end, bytes, src): a loop
  // that visits rows in another order than theirs calls it a few rows ahead (core/prefetch.h).
  void PrefetchRow(size_t r) const {
    __builtin_prefetch(&start_ns_[r]);
    __builtin_prefetch(&duration_low_[r]);
    __builtin_prefetch(&bytes_low_[r]);
    __builtin_prefetch(&src_[r]);
  }
  uint64_t EstimatedBytes(size_t r) const {
    return sampling_rate_.empty() ? Bytes(r) : Bytes(r) * sampling_rate_[r];
  }

  const EndpointTable& endpoints() const { return endpoints_; }
  EndpointTable& endpoints() { return endpoints_; }

  int64_t min_start_ns() const { return min_start_ns_; }
  int64_t max_end_ns() const { return max_end_ns_; }
  // True when the rows are in the order SortByStart leaves them (it, CopyRows or KeepRows was the
  // last change); an append makes it false. A pass that needs the rows in start order trusts it
  // instead of checking every row again (the check was a pass over 8 bytes per record).
  bool sorted_by_start() const { return sorted_by_start_; }
  // The latest start (INT64_MIN when empty): the last row's when sorted by start, else a pass
  // over the starts. Records are binned by start, so this bounds the bins, whatever a record's
  // claimed end.
  int64_t LatestStartNs() const {
    if (start_ns_.empty()) return INT64_MIN;
    if (sorted_by_start_) return start_ns_.back();
    return *std::max_element(start_ns_.begin(), start_ns_.end());
  }

 private:
  void RecomputeBounds(int threads = 1);
  bool StartsInOrder(int threads) const;
  void OrderEqualStarts(int threads);
  void OrderEqualStartsIn(size_t lo, size_t hi);  // rows [lo, hi): whole runs of equal start

  EndpointTable endpoints_;
  EndpointCache endpoint_cache_;  // in front of endpoints_ for appends
  // Columns in blocks kept from stage to stage (core/big_blocks.h): the sort's gathers move them
  // through buffers that other stages freed, not through fresh pages.
  BigVector<int64_t> start_ns_;
  BigVector<uint32_t> duration_low_, duration_high_;  // duration_high_ empty while all are short
  BigVector<EndpointId> src_, dst_;
  BigVector<uint32_t> bytes_low_, bytes_high_;  // bytes_high_ empty while all are below 4 GiB
  BigVector<uint32_t> qp_;
  BigVector<PointId> point_;
  BigVector<uint32_t> sampling_rate_;  // empty while no record is sampled (lazy_column.h)
  int64_t min_start_ns_ = INT64_MAX, max_end_ns_ = INT64_MIN;
  bool sorted_by_start_ = false;
  // While tails are out (MakeTails): the rows the table may hold and the tails not yet appended.
  size_t row_limit_ = SIZE_MAX;
  size_t tails_out_ = 0;
};

}  // namespace prism::flow
