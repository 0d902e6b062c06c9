#include "flow/flow_table.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <ranges>
#include <thread>
#include <type_traits>
#include <utility>

#include "core/prefetch.h"
#include "core/status.h"
#include "flow/lazy_column.h"
#include "flow/radix_sort.h"
#include "flow/row_runs.h"

namespace prism::flow {

void FlowTable::OnRecord(const FlowRecord& r) {
  PRISM_CHECK(start_ns_.size() < row_limit_);  // a tail's room follows (MakeTails)
  sorted_by_start_ = false;
  AppendLazy(&sampling_rate_, size(), std::span(&r.sampling_rate, 1), 1u, HeldSamplingRate);
  AppendLazy(&bytes_high_, size(), std::span(&r.bytes, 1), 0u, HighHalf);
  const uint64_t duration = DurationOf(r.start_ns, r.end_ns);
  AppendLazy(&duration_high_, size(), std::span(&duration, 1), 0u, HighHalf);
  start_ns_.push_back(r.start_ns);
  duration_low_.push_back(LowHalf(duration));
  src_.push_back(endpoint_cache_.Intern(r.src, &endpoints_));
  dst_.push_back(endpoint_cache_.Intern(r.dst, &endpoints_));
  bytes_low_.push_back(LowHalf(r.bytes));
  qp_.push_back(r.qp);
  point_.push_back(r.point);
  min_start_ns_ = std::min(min_start_ns_, r.start_ns);
  max_end_ns_ = std::max(max_end_ns_, r.end_ns);
}

void FlowTable::OnBatch(RecordBatch* batch) {
  const size_t n = batch->size;
  PRISM_CHECK(n <= row_limit_ - start_ns_.size());  // a tail's room follows (MakeTails)
  sorted_by_start_ = false;
  const size_t at = size();
  // One branch-free pass for the low halves, the bounds, and whether any record needs a lazy
  // column (flow/lazy_column.h): three passes that each stopped at the first unusual value, a
  // fourth for the low halves and the bounds in the interning loop were ~125 instructions per
  // record with the interning (callgrind, scale-10k).
  duration_low_.resize(at + n);
  bytes_low_.resize(at + n);
  uint32_t high_durations = 0, high_bytes = 0;
  bool rated = false;
  int64_t min_start = min_start_ns_, max_end = max_end_ns_;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t duration = DurationOf(batch->start_ns[i], batch->end_ns[i]);
    duration_low_[at + i] = LowHalf(duration);
    bytes_low_[at + i] = LowHalf(batch->bytes[i]);
    high_durations |= HighHalf(duration);
    high_bytes |= HighHalf(batch->bytes[i]);
    rated |= HeldSamplingRate(batch->sampling_rate[i]) != 1u;
    min_start = std::min(min_start, batch->start_ns[i]);
    max_end = std::max(max_end, batch->end_ns[i]);
  }
  min_start_ns_ = min_start;
  max_end_ns_ = max_end;
  if (rated || !sampling_rate_.empty()) {
    AppendLazy(&sampling_rate_, at, std::span(batch->sampling_rate.data(), n), 1u,
               HeldSamplingRate);
  }
  if (high_bytes != 0 || !bytes_high_.empty())
    AppendLazy(&bytes_high_, at, std::span(batch->bytes.data(), n), 0u, HighHalf);
  if (high_durations != 0 || !duration_high_.empty()) {
    const auto duration = [batch](size_t i) {
      return DurationOf(batch->start_ns[i], batch->end_ns[i]);
    };
    AppendLazy(&duration_high_, at,
               std::views::iota(size_t{0}, n) | std::views::transform(duration), 0u, HighHalf);
  }
  auto append = [n](auto* column, const auto& from) {
    column->insert(column->end(), from.begin(), from.begin() + static_cast<ptrdiff_t>(n));
  };
  append(&start_ns_, batch->start_ns);
  append(&qp_, batch->qp);
  append(&point_, batch->point);
  for (size_t i = 0; i < n; ++i) {
    src_.push_back(endpoint_cache_.Intern(batch->src[i], &endpoints_));
    dst_.push_back(endpoint_cache_.Intern(batch->dst[i], &endpoints_));
  }
}

std::vector<FlowTableTail> FlowTable::MakeTails(size_t own_rows,
                                                std::span<const size_t> tail_rows) {
  PRISM_CHECK(tails_out_ == 0);
  sorted_by_start_ = false;  // the tails' rows follow
  size_t end = size() + own_rows;
  row_limit_ = end;
  size_t rows = end;
  for (size_t r : tail_rows) rows += r;
  Reserve(rows);
  std::vector<FlowTableTail> tails;
  for (size_t room : tail_rows) {
    const FlowTableTail::Columns at{start_ns_.data() + end, duration_low_.data() + end,
                                    src_.data() + end,      dst_.data() + end,
                                    bytes_low_.data() + end, qp_.data() + end,
                                    point_.data() + end};
    tails.push_back(FlowTableTail(end, room, at));
    end += room;
  }
  tails_out_ = tails.size();
  if (tails_out_ == 0) row_limit_ = SIZE_MAX;
  return tails;
}

namespace {

// Gives back to the system the whole pages of `column`'s capacity in rows [from, to), which hold
// nothing (past its end) but were written: the tails' rows before they moved down.
template <typename T>
void ReleaseRowsPastEnd(BigVector<T>* column, size_t from, size_t to) {
  to = std::min(to, column->capacity());
  if (from >= to) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(column->data() + from) + page - 1) & ~(page - 1);
  const uintptr_t hi = reinterpret_cast<uintptr_t>(column->data() + to) & ~(page - 1);
  if (lo < hi) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

}  // namespace

void FlowTable::AppendTail(FlowTableTail&& tail, std::span<const PointId> point_of, int threads) {
  PRISM_CHECK(tails_out_ > 0 && tail.first_row_ >= size());
  sorted_by_start_ = false;
  const size_t before = size();
  std::vector<EndpointId> endpoint_of(tail.endpoints_.size());
  for (size_t e = 0; e < endpoint_of.size(); ++e) {
    endpoint_of[e] = endpoints_.Intern(tail.endpoints_.Addr(static_cast<EndpointId>(e)));
  }
  min_start_ns_ = std::min(min_start_ns_, tail.min_start_ns_);
  max_end_ns_ = std::max(max_end_ns_, tail.max_end_ns_);
  const size_t from = tail.first_row_, n = tail.rows_;
  auto same = [](auto v) { return v; };
  auto endpoint = [&](EndpointId e) { return endpoint_of[e]; };
  auto point = [&](PointId p) { return p == kNoPoint ? p : point_of[p]; };
  // Each column's tail rows [from, from + n) move down to its end (from >= size()), mapped as
  // they go. The capacity, reserved by MakeTails, holds them without a reallocation. The two
  // ranges may overlap: the rows move in chunks no longer than the gap between them, so no
  // chunk's destination overlaps its source (a chunk is copied whole, as memcpy may); a gap too
  // short for that has its rows appended one by one from the front (a view's iterators), where
  // no row is read after it was overwritten.
  const size_t gap = from - size();
  auto move_column = [&](auto* column, auto map) {
    if (gap < std::min<size_t>(n, size_t{1} << 16)) {
      const std::span rows(column->data() + from, n);
      auto moved = rows | std::views::transform(map);
      column->insert(column->end(), moved.begin(), moved.end());
      return;
    }
    for (size_t done = 0; done < n;) {
      const size_t len = std::min(gap, n - done);
      const auto* rows = column->data() + from + done;
      const size_t at = column->size();
      if constexpr (std::is_same_v<decltype(map), decltype(same)>) {
        column->insert(column->end(), rows, rows + len);
      } else {
        column->resize(at + len);  // zeros [at, at + len): below the chunk's source
        std::transform(rows, rows + len, column->data() + at, map);
      }
      done += len;
    }
  };
  // Two groups of about equal bytes: with `threads` > 1 one on a helper thread.
  auto first_group = [&] {
    move_column(&start_ns_, same);
    move_column(&duration_low_, same);
    move_column(&src_, endpoint);
  };
  auto second_group = [&] {
    move_column(&bytes_low_, same);
    move_column(&dst_, endpoint);
    move_column(&qp_, same);
    move_column(&point_, point);
  };
  if (threads > 1 && n >= (size_t{1} << 16)) {
    std::thread helper(first_group);
    second_group();
    helper.join();
  } else {
    first_group();
    second_group();
  }
  // The tail's lazy columns were taken apart from the table's (flow/lazy_column.h).
  AppendLazyColumn(&sampling_rate_, before, tail.sampling_rate_, n, 1u);
  AppendLazyColumn(&bytes_high_, before, tail.bytes_high_, n, 0u);
  AppendLazyColumn(&duration_high_, before, tail.duration_high_, n, 0u);
  tail = FlowTableTail(0, 0, {});
  if (--tails_out_ > 0) return;
  row_limit_ = SIZE_MAX;
  ReleaseUnusedCapacity();  // the pages the tails wrote past the table's end
}

void FlowTable::ReleaseUnusedCapacity() {
  const size_t end = size();
  auto release = [&](auto*... column) {
    (ReleaseRowsPastEnd(column, end, column->capacity()), ...);
  };
  release(&start_ns_, &duration_low_, &duration_high_, &src_, &dst_, &bytes_low_, &bytes_high_,
          &qp_, &point_, &sampling_rate_);
}

void FlowTable::Reserve(size_t rows) {
  start_ns_.reserve(rows);
  duration_low_.reserve(rows);
  if (!duration_high_.empty()) duration_high_.reserve(rows);  // else none is held (lazy_column.h)
  src_.reserve(rows);
  dst_.reserve(rows);
  bytes_low_.reserve(rows);
  if (!bytes_high_.empty()) bytes_high_.reserve(rows);  // else none is held (lazy_column.h)
  qp_.reserve(rows);
  point_.reserve(rows);
  if (!sampling_rate_.empty()) sampling_rate_.reserve(rows);
}

namespace {

// Gathers each column into the order of `rows`. The columns share one buffer: the storage a
// column leaves receives the next one, so only the first costs fresh pages (page faults were a
// large part of the sort's time), none when it is a kept block (core/big_blocks.h: the radix
// keys, an earlier gather's column). Each gather misses the cache (and at 100,000 GPUs the TLB):
// the row kPrefetchAhead ahead is asked for early. With threads, each column's rows are cut into
// runs, one a thread: the threads finish together, and only one column's second copy is in
// flight (the sort's memory peak). Giving each thread columns of its own (three of 8 bytes on
// one, five of 4 on the other) left one idle at the end and held two copies.
template <typename T>
void Permute(std::initializer_list<BigVector<T>*> columns, std::span<const RowId> rows,
             int threads) {
  BigVector<T> buffer;
  for (BigVector<T>* column : columns) {
    buffer.resize(column->size());
    OnRowRuns(rows.size(), threads, [&](size_t begin, size_t end, size_t) {
      const size_t ahead = end - begin > kPrefetchAhead ? end - kPrefetchAhead : begin;
      for (size_t i = begin; i < ahead; ++i) {
        __builtin_prefetch(column->data() + rows[i + kPrefetchAhead]);
        buffer[i] = (*column)[rows[i]];
      }
      for (size_t i = ahead; i < end; ++i) buffer[i] = (*column)[rows[i]];
    });
    column->swap(buffer);
  }
}

int BitWidth(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

}  // namespace

bool FlowTable::StartsInOrder(int threads) const {
  const size_t runs = RowRunsFor(size(), threads);
  std::vector<char> in_order(runs);
  OnRowRuns(size(), threads, [&](size_t begin, size_t end, size_t t) {
    in_order[t] = (begin == 0 || start_ns_[begin - 1] <= start_ns_[begin]) &&
                  std::is_sorted(start_ns_.begin() + ptrdiff_t(begin), start_ns_.begin() + ptrdiff_t(end));
  });
  return std::all_of(in_order.begin(), in_order.end(), [](char c) { return c != 0; });
}

void FlowTable::SortByStart(int threads) {
  PRISM_CHECK(has_transfer_columns());
  const size_t n = size();
  if (StartsInOrder(threads)) {
    // Starts already in order (a window cut from a sorted table, a source that delivers in start
    // order): no row moves between starts, but runs of equal start must still be put in
    // (end, src, dst) order — a cut re-interns its endpoints, so its ids order ties differently.
    OrderEqualStarts(threads);
    sorted_by_start_ = true;
    return;
  }
  // Rows are sorted by (start, row) with a radix sort of 64-bit keys, (start - min start) above
  // the row number (radix_sort.h, SortStartsAndRows), which also leaves the starts in order. The
  // pass for the bounds is cut into runs on the threads too.
  const size_t runs = RowRunsFor(n, threads);
  std::vector<std::pair<int64_t, int64_t>> bounds(runs);
  OnRowRuns(n, threads, [&](size_t begin, size_t end, size_t t) {
    // Values, not std::minmax_element's positions: branch-free, half its time.
    int64_t run_lo = INT64_MAX, run_hi = INT64_MIN;
    for (size_t r = begin; r < end; ++r) {
      run_lo = std::min(run_lo, start_ns_[r]);
      run_hi = std::max(run_hi, start_ns_[r]);
    }
    bounds[t] = {run_lo, run_hi};
  });
  int64_t lo = bounds[0].first, hi = bounds[0].second;
  for (const auto& [run_lo, run_hi] : bounds) lo = std::min(lo, run_lo), hi = std::max(hi, run_hi);
  const int row_bits = std::max(1, BitWidth(n - 1));
  const int start_bits = BitWidth(static_cast<uint64_t>(hi - lo));
  // The row numbers in (start, row) order, 4 bytes per row while the other columns are moved
  // (each move holds a second copy of one column: the sort's memory peak).
  BigArray<RowId> rows(n);
  const std::span<RowId> order(rows.data(), n);
  if (row_bits + start_bits <= 64) {
    SortStartsAndRows(start_ns_, lo, row_bits, start_bits, threads, order);  // starts sorted too
  } else {  // a time span too long to pack with the row: sort the rows by start
    std::iota(order.begin(), order.end(), RowId{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](RowId a, RowId b) { return start_ns_[a] < start_ns_[b]; });
    Permute({&start_ns_}, order, threads);
  }
  Permute({&duration_low_, &src_, &dst_, &bytes_low_, &qp_, &point_}, order, threads);
  for (BigVector<uint32_t>* lazy : {&duration_high_, &bytes_high_, &sampling_rate_})
    if (!lazy->empty()) Permute({lazy}, order, threads);
  OrderEqualStarts(threads);
  sorted_by_start_ = true;
}

void FlowTable::OrderEqualStarts(int threads) {
  // Rows are in (start, row) order. Runs of equal start (the records of one transfer often
  // share it) are put in (end, src, dst) order, stable — now that a run's columns are adjacent,
  // where comparing before the move missed the cache on every row. Each run of equal start is
  // ordered on its own: with threads, the rows are cut into runs of rows at starts that differ
  // from the row before, so no run of equal start is cut.
  const size_t n = size();
  const size_t runs = RowRunsFor(n, threads);
  std::vector<size_t> cut(runs + 1, n);
  cut[0] = 0;
  for (size_t t = 1; t < runs; ++t) {
    size_t c = std::max(cut[t - 1], n * t / runs);
    while (c > 0 && c < n && start_ns_[c] == start_ns_[c - 1]) ++c;
    cut[t] = c;
  }
  OnRuns(runs, [&](size_t t) { OrderEqualStartsIn(cut[t], cut[t + 1]); });
}

void FlowTable::OrderEqualStartsIn(size_t lo, size_t hi) {
  const size_t n = hi;
  auto less = [&](size_t x, size_t y) {
    if (EndNs(x) != EndNs(y)) return EndNs(x) < EndNs(y);
    if (src_[x] != src_[y]) return src_[x] < src_[y];
    return dst_[x] < dst_[y];
  };
  std::vector<uint32_t> local;
  for (size_t i = lo; i < n;) {
    // Most starts are their row's alone: the next run of equal starts is found one comparison
    // per row (callgrind, scale-10k: this pass, made twice, was 1.4% of a run's instructions).
    size_t first_equal = i + 1;
    while (first_equal < n && start_ns_[first_equal] != start_ns_[first_equal - 1]) ++first_equal;
    if (first_equal >= n) break;
    i = first_equal - 1;
    size_t j = first_equal + 1;
    while (j < n && start_ns_[j] == start_ns_[i]) ++j;
    bool ordered = true;
    for (size_t k = i + 1; k < j && ordered; ++k) ordered = !less(k, k - 1);
    if (!ordered) {
      local.resize(j - i);
      std::iota(local.begin(), local.end(), uint32_t(i));
      std::stable_sort(local.begin(), local.end(), less);
      auto apply = [&](auto* column) {
        using T = typename std::remove_reference_t<decltype(*column)>::value_type;
        T tmp[64];
        std::vector<T> big;
        T* buf = tmp;
        if (local.size() > 64) {
          big.resize(local.size());
          buf = big.data();
        }
        for (size_t k = 0; k < local.size(); ++k) buf[k] = (*column)[local[k]];
        std::copy(buf, buf + local.size(), column->begin() + static_cast<ptrdiff_t>(i));
      };
      apply(&start_ns_);
      apply(&duration_low_);
      if (!duration_high_.empty()) apply(&duration_high_);
      apply(&src_);
      apply(&dst_);
      apply(&bytes_low_);
      if (!bytes_high_.empty()) apply(&bytes_high_);
      apply(&qp_);
      apply(&point_);
      if (!sampling_rate_.empty()) apply(&sampling_rate_);
    }
    i = j;
  }
}

namespace {

// Interns the endpoints of rows [lo, hi) into `to` in row order (source, then destination), as
// OnRecord would, and returns the old id -> new id map. With threads, each run of rows finds
// where each endpoint first appears in it (2 * row, + 1 as a destination); the earliest over the
// runs orders the endpoints, which are then interned in that order: the same ids.
std::vector<EndpointId> RenumberEndpoints(const EndpointTable& from, std::span<const EndpointId> src,
                                          std::span<const EndpointId> dst, size_t lo, size_t hi,
                                          EndpointTable* to, int threads = 1) {
  constexpr EndpointId kUnset = std::numeric_limits<EndpointId>::max();
  std::vector<EndpointId> remap(from.size(), kUnset);
  const size_t runs = RowRunsFor(hi - lo, threads);
  if (runs == 1) {
    for (size_t r = lo; r < hi; ++r) {
      for (EndpointId e : {src[r], dst[r]})
        if (remap[e] == kUnset) remap[e] = to->Intern(from.Addr(e));
    }
    return remap;
  }
  constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  std::vector<std::vector<uint64_t>> first(runs);
  OnRowRuns(hi - lo, threads, [&](size_t begin, size_t end, size_t t) {
    std::vector<uint64_t>& at = first[t];
    at.assign(from.size(), kNever);
    for (size_t r = lo + begin; r < lo + end; ++r) {
      if (at[src[r]] == kNever) at[src[r]] = 2 * uint64_t(r);
      if (at[dst[r]] == kNever) at[dst[r]] = 2 * uint64_t(r) + 1;
    }
  });
  std::vector<std::pair<uint64_t, EndpointId>> order;
  for (size_t e = 0; e < from.size(); ++e) {
    uint64_t earliest = kNever;
    for (const std::vector<uint64_t>& at : first) earliest = std::min(earliest, at[e]);
    if (earliest != kNever) order.emplace_back(earliest, static_cast<EndpointId>(e));
  }
  std::sort(order.begin(), order.end());
  for (const auto& [at, e] : order) remap[e] = to->Intern(from.Addr(e));
  return remap;
}

}  // namespace

FlowTable FlowTable::CopyRows(size_t lo, size_t hi) const {
  PRISM_CHECK(has_transfer_columns());
  FlowTable w;
  const std::vector<EndpointId> remap =
      RenumberEndpoints(endpoints_, src_, dst_, lo, hi, &w.endpoints_);
  auto copy = [lo, hi](const auto& from, auto* to) { to->assign(from.begin() + lo, from.begin() + hi); };
  copy(start_ns_, &w.start_ns_);
  copy(duration_low_, &w.duration_low_);
  if (!duration_high_.empty()) copy(duration_high_, &w.duration_high_);
  copy(bytes_low_, &w.bytes_low_);
  if (!bytes_high_.empty()) copy(bytes_high_, &w.bytes_high_);
  copy(qp_, &w.qp_);
  copy(point_, &w.point_);
  if (!sampling_rate_.empty()) copy(sampling_rate_, &w.sampling_rate_);
  w.src_.resize(hi - lo);
  w.dst_.resize(hi - lo);
  for (size_t r = lo; r < hi; ++r) {
    w.src_[r - lo] = remap[src_[r]];
    w.dst_[r - lo] = remap[dst_[r]];
  }
  w.RecomputeBounds();
  w.SortByStart();  // ties are broken by endpoint id, which differs from ours
  return w;
}

void FlowTable::KeepRows(size_t lo, size_t hi, int threads) {
  PRISM_CHECK(has_transfer_columns());
  const bool all_rows = lo == 0 && hi == size();
  EndpointTable kept;
  const std::vector<EndpointId> remap =
      RenumberEndpoints(endpoints_, src_, dst_, lo, hi, &kept, threads);
  endpoints_ = std::move(kept);
  auto keep = [lo, hi](auto* column) {
    column->resize(hi);
    column->erase(column->begin(), column->begin() + lo);
  };
  keep(&start_ns_);
  keep(&duration_low_);
  if (!duration_high_.empty()) keep(&duration_high_);
  keep(&src_);
  keep(&dst_);
  keep(&bytes_low_);
  if (!bytes_high_.empty()) keep(&bytes_high_);
  keep(&qp_);
  keep(&point_);
  if (!sampling_rate_.empty()) keep(&sampling_rate_);
  OnRowRuns(size(), threads, [&](size_t begin, size_t end, size_t) {
    for (size_t r = begin; r < end; ++r) {
      src_[r] = remap[src_[r]];
      dst_[r] = remap[dst_[r]];
    }
  });
  // Every row kept (the one window of a run, nearly always): the bounds are the table's own.
  if (!all_rows) RecomputeBounds(threads);
  if (!sorted_by_start_) return SortByStart(threads);
  // Kept rows of a sorted table keep their starts in order; only ties are ordered again, by the
  // re-interned ids (as SortByStart would after checking every start).
  OrderEqualStarts(threads);
}

void FlowTable::ReleaseTransferColumns() {
  BigVector<uint32_t>().swap(qp_);
  // Unsampled input holds no rates (flow/lazy_column.h), nor does a window cut from sampled
  // input whose own records are all unsampled; sampled input keeps them for EstimatedBytes.
  if (std::all_of(sampling_rate_.begin(), sampling_rate_.end(), [](uint32_t n) { return n <= 1; })) {
    BigVector<uint32_t>().swap(sampling_rate_);
  }
}

void FlowTable::RecomputeBounds(int threads) {
  std::vector<std::pair<int64_t, int64_t>> bounds(RowRunsFor(size(), threads),
                                                  {INT64_MAX, INT64_MIN});
  OnRowRuns(size(), threads, [&](size_t begin, size_t end, size_t t) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;  // not in `bounds`: its slots share a cache line
    for (size_t r = begin; r < end; ++r) {
      lo = std::min(lo, start_ns_[r]);
      hi = std::max(hi, EndNs(r));
    }
    bounds[t] = {lo, hi};
  });
  min_start_ns_ = INT64_MAX;
  max_end_ns_ = INT64_MIN;
  for (const auto& [lo, hi] : bounds) {
    min_start_ns_ = std::min(min_start_ns_, lo);
    max_end_ns_ = std::max(max_end_ns_, hi);
  }
}

}  // namespace prism::flow
