#include "flow/flow_table.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <thread>
#include <type_traits>
#include <utility>

#include "core/prefetch.h"
#include "core/status.h"
#include "flow/radix_sort.h"

namespace prism::flow {

void FlowTable::OnRecord(const FlowRecord& r) {
  start_ns_.push_back(r.start_ns);
  end_ns_.push_back(r.end_ns);
  src_.push_back(endpoint_cache_.Intern(r.src, &endpoints_));
  dst_.push_back(endpoint_cache_.Intern(r.dst, &endpoints_));
  bytes_.push_back(r.bytes);
  qp_.push_back(r.qp);
  point_.push_back(r.point);
  sampling_rate_.push_back(r.sampling_rate);
  min_start_ns_ = std::min(min_start_ns_, r.start_ns);
  max_end_ns_ = std::max(max_end_ns_, r.end_ns);
}

void FlowTable::OnBatch(RecordBatch* batch) {
  const size_t n = batch->size;
  auto append = [n](auto* column, const auto& from) {
    column->insert(column->end(), from.begin(), from.begin() + static_cast<ptrdiff_t>(n));
  };
  append(&start_ns_, batch->start_ns);
  append(&end_ns_, batch->end_ns);
  append(&bytes_, batch->bytes);
  append(&qp_, batch->qp);
  append(&point_, batch->point);
  append(&sampling_rate_, batch->sampling_rate);
  for (size_t i = 0; i < n; ++i) {
    src_.push_back(endpoint_cache_.Intern(batch->src[i], &endpoints_));
    dst_.push_back(endpoint_cache_.Intern(batch->dst[i], &endpoints_));
    min_start_ns_ = std::min(min_start_ns_, batch->start_ns[i]);
    max_end_ns_ = std::max(max_end_ns_, batch->end_ns[i]);
  }
}

void FlowTable::AppendTable(FlowTable&& later, std::span<const PointId> point_of, int threads) {
  std::vector<EndpointId> endpoint_of(later.endpoints_.size());
  for (size_t e = 0; e < endpoint_of.size(); ++e) {
    endpoint_of[e] = endpoints_.Intern(later.endpoints_.Addr(static_cast<EndpointId>(e)));
  }
  min_start_ns_ = std::min(min_start_ns_, later.min_start_ns_);
  max_end_ns_ = std::max(max_end_ns_, later.max_end_ns_);
  // Each column of `later` goes back to the system as soon as it has moved, not kept
  // (core/big_blocks.h): this table's columns were reserved whole, and kept here they would sit
  // beside the sort's larger buffers, which they cannot serve.
  auto free_column = [](auto* column) {
    std::remove_reference_t<decltype(*column)>().swap(*column);
    ReleaseBigBlocks();
  };
  auto move_column = [&](auto* to, auto* from) {
    to->insert(to->end(), from->begin(), from->end());
    free_column(from);
  };
  auto map_column = [&](auto* to, auto* from, auto map) {
    for (auto v : *from) to->push_back(map(v));
    free_column(from);
  };
  auto endpoint = [&](EndpointId e) { return endpoint_of[e]; };
  // The columns are appended in two groups of about equal bytes: with `threads` > 1 one group on
  // a helper thread (copying into fresh pages is most of the cost: their page faults).
  auto first_group = [&] {
    move_column(&start_ns_, &later.start_ns_);
    move_column(&end_ns_, &later.end_ns_);
    map_column(&src_, &later.src_, endpoint);
  };
  auto second_group = [&] {
    move_column(&bytes_, &later.bytes_);
    map_column(&dst_, &later.dst_, endpoint);
    move_column(&qp_, &later.qp_);
    map_column(&point_, &later.point_, [&](PointId p) { return p == kNoPoint ? p : point_of[p]; });
    move_column(&sampling_rate_, &later.sampling_rate_);
  };
  if (threads > 1) {
    std::thread helper(first_group);
    second_group();
    helper.join();
  } else {
    first_group();
    second_group();
  }
  later = FlowTable();
}

void FlowTable::Reserve(size_t rows) {
  start_ns_.reserve(rows);
  end_ns_.reserve(rows);
  src_.reserve(rows);
  dst_.reserve(rows);
  bytes_.reserve(rows);
  qp_.reserve(rows);
  point_.reserve(rows);
  sampling_rate_.reserve(rows);
}

namespace {

// Gathers each column into `order`. The columns share one buffer: the storage a column leaves
// receives the next one, so only the first costs fresh pages (page faults were a large part of
// the sort's time), none when `buffer` comes with pages already touched or is a kept block
// (core/big_blocks.h: the radix scratch, an earlier gather's column). Each gather misses the
// cache (and at 100,000 GPUs the TLB): the row kPrefetchAhead ahead is asked for early.
template <typename T>
void Permute(std::initializer_list<BigVector<T>*> columns, const BigVector<RowId>& rows,
             BigVector<T> buffer = {}) {
  for (BigVector<T>* column : columns) {
    buffer.resize(column->size());
    const size_t n = rows.size(), ahead = n > kPrefetchAhead ? n - kPrefetchAhead : 0;
    for (size_t i = 0; i < ahead; ++i) {
      __builtin_prefetch(column->data() + rows[i + kPrefetchAhead]);
      buffer[i] = (*column)[rows[i]];
    }
    for (size_t i = ahead; i < n; ++i) buffer[i] = (*column)[rows[i]];
    column->swap(buffer);
  }
}

int BitWidth(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

}  // namespace

void FlowTable::SortByStart(int threads) {
  PRISM_CHECK(has_transfer_columns());
  const size_t n = size();
  if (std::is_sorted(start_ns_.begin(), start_ns_.end())) {
    // Starts already in order (a window cut from a sorted table, a source that delivers in start
    // order): no row moves between starts, but runs of equal start must still be put in
    // (end, src, dst) order — a cut re-interns its endpoints, so its ids order ties differently.
    OrderEqualStarts();
    return;
  }
  // Each row becomes one 64-bit key, (start - min start) above the row number, sorted over the
  // start bits only (radix_sort.h): the row bits start in order and the sort is stable, so keys
  // end up ordered by (start, row). 16 bytes per row of scratch.
  const auto [lo_it, hi_it] = std::minmax_element(start_ns_.begin(), start_ns_.end());
  const int64_t lo = *lo_it;
  const int row_bits = std::max(1, BitWidth(n - 1));
  const int start_bits = BitWidth(static_cast<uint64_t>(*hi_it - lo));
  BigVector<uint64_t> order(n);
  uint64_t row_mask = (uint64_t{1} << row_bits) - 1;
  if (row_bits + start_bits <= 64) {
    for (size_t r = 0; r < n; ++r)
      order[r] = (static_cast<uint64_t>(start_ns_[r] - lo) << row_bits) | r;
    RadixSortByBits(&order, row_bits, start_bits, threads);
  } else {  // a time span too long to pack with the row: sort the rows by start
    row_mask = ~uint64_t{0};
    for (size_t r = 0; r < n; ++r) order[r] = r;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint64_t a, uint64_t b) { return start_ns_[a] < start_ns_[b]; });
  }
  // Only the row numbers are needed now: 4 bytes per row instead of the 8 of the keys while the
  // columns are moved (each move holds a second copy of one column: the sort's memory peak); the
  // keys' storage is the first move's buffer (one thread) or given back before the threads start
  // (two: kept, core/big_blocks.h, it becomes one of their gather buffers).
  BigVector<RowId> rows(n);
  for (size_t i = 0; i < n; ++i) rows[i] = static_cast<RowId>(order[i] & row_mask);
  // The gathers miss the cache on nearly every row and the columns are independent: with two
  // threads each takes about half of the misses (one more buffer in flight meanwhile). The
  // helper moves its 4-byte columns first, so while both run one 8-byte and one 4-byte buffer
  // are in flight, not two 8-byte ones (the main thread is done with its two by the time the
  // helper reaches bytes).
  auto first_half = [&] { Permute({&start_ns_, &end_ns_}, rows); };
  auto second_half = [&] {
    Permute({&src_, &dst_, &qp_, &point_, &sampling_rate_}, rows);
    Permute({&bytes_}, rows);
  };
  if (threads > 1 && n >= (size_t{1} << 16)) {
    BigVector<uint64_t>().swap(order);
    std::thread helper(second_half);
    first_half();
    helper.join();
  } else {
    // One thread: the 8-byte column of the same type as the keys moves first, into the keys'
    // pages (already touched: no fresh ones, as many bytes in flight as the other columns).
    Permute({&bytes_}, rows, std::move(order));
    first_half();
    Permute({&src_, &dst_, &qp_, &point_, &sampling_rate_}, rows);
  }
  OrderEqualStarts();
}

void FlowTable::OrderEqualStarts() {
  // Rows are in (start, row) order. Runs of equal start (the records of one transfer often
  // share it) are put in (end, src, dst) order, stable — now that a run's columns are adjacent,
  // where comparing before the move missed the cache on every row.
  const size_t n = size();
  auto less = [&](size_t x, size_t y) {
    if (end_ns_[x] != end_ns_[y]) return end_ns_[x] < end_ns_[y];
    if (src_[x] != src_[y]) return src_[x] < src_[y];
    return dst_[x] < dst_[y];
  };
  std::vector<uint32_t> local;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
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
      apply(&end_ns_);
      apply(&src_);
      apply(&dst_);
      apply(&bytes_);
      apply(&qp_);
      apply(&point_);
      apply(&sampling_rate_);
    }
    i = j;
  }
}

namespace {

// Interns the endpoints of rows [lo, hi) into `to` in row order (source, then destination), as
// OnRecord would, and returns the old id -> new id map.
std::vector<EndpointId> RenumberEndpoints(const EndpointTable& from, std::span<const EndpointId> src,
                                          std::span<const EndpointId> dst, size_t lo, size_t hi,
                                          EndpointTable* to) {
  constexpr EndpointId kUnset = std::numeric_limits<EndpointId>::max();
  std::vector<EndpointId> remap(from.size(), kUnset);
  for (size_t r = lo; r < hi; ++r) {
    for (EndpointId e : {src[r], dst[r]})
      if (remap[e] == kUnset) remap[e] = to->Intern(from.Addr(e));
  }
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
  copy(end_ns_, &w.end_ns_);
  copy(bytes_, &w.bytes_);
  copy(qp_, &w.qp_);
  copy(point_, &w.point_);
  copy(sampling_rate_, &w.sampling_rate_);
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

void FlowTable::KeepRows(size_t lo, size_t hi) {
  PRISM_CHECK(has_transfer_columns());
  EndpointTable kept;
  const std::vector<EndpointId> remap = RenumberEndpoints(endpoints_, src_, dst_, lo, hi, &kept);
  endpoints_ = std::move(kept);
  auto keep = [lo, hi](auto* column) {
    column->resize(hi);
    column->erase(column->begin(), column->begin() + lo);
  };
  keep(&start_ns_);
  keep(&end_ns_);
  keep(&src_);
  keep(&dst_);
  keep(&bytes_);
  keep(&qp_);
  keep(&point_);
  keep(&sampling_rate_);
  for (EndpointId& e : src_) e = remap[e];
  for (EndpointId& e : dst_) e = remap[e];
  RecomputeBounds();
  SortByStart();
}

void FlowTable::ReleaseTransferColumns() {
  BigVector<uint32_t>().swap(qp_);
  // Unsampled input (nearly always) frees its 4 bytes per record; sampled input keeps them for
  // EstimatedBytes.
  if (std::all_of(sampling_rate_.begin(), sampling_rate_.end(), [](uint32_t n) { return n <= 1; })) {
    BigVector<uint32_t>().swap(sampling_rate_);
  }
}

void FlowTable::RecomputeBounds() {
  min_start_ns_ = INT64_MAX;
  max_end_ns_ = INT64_MIN;
  for (int64_t s : start_ns_) min_start_ns_ = std::min(min_start_ns_, s);
  for (int64_t e : end_ns_) max_end_ns_ = std::max(max_end_ns_, e);
}

}  // namespace prism::flow
