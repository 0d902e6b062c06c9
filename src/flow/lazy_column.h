// File: flow/lazy_column.h
// A column of a table held only once a record's value differs from the column's usual one.
// Nearly all input never does: a rate of 1 in 1 (RDMA flow records from switches, pcap), bytes
// below 4 GiB and durations below 4.3 s (the high halves of a record's 64-bit byte count and
// duration). There such a column would be 4 bytes per record written, sorted and held to the
// analysis's memory peak for nothing. So it stays empty while every record so far holds the usual
// value, and the first that does not fills it with the usual value for the records before it
// (flow/flow_table.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/big_blocks.h"

namespace prism::flow {

// Appends held(v) for each of `values`, the values of the records that follow the first
// `records_before` of a table (which are all in `column`, or all held `usual`).
template <typename T, typename Values, typename Held>
void AppendLazy(BigVector<T>* column, size_t records_before, const Values& values, T usual,
                Held held) {
  if (column->empty()) {
    if (std::ranges::all_of(values, [&](const auto& v) { return held(v) == usual; })) return;
    column->resize(records_before, usual);
  }
  const size_t at = column->size();
  column->resize(at + values.size());
  std::ranges::transform(values, column->begin() + ptrdiff_t(at), held);
}

// The value of record `r` of a table whose column is `column`: `usual` when it is empty.
template <typename T>
T LazyAt(std::span<const T> column, size_t r, T usual) {
  return column.empty() ? usual : column[r];
}

// Appends `tail_column`, a later part's column of `tail_records` records, to `column`, which
// holds `records_before` records before it (either may be empty: all usual).
template <typename T>
void AppendLazyColumn(BigVector<T>* column, size_t records_before, const BigVector<T>& tail_column,
                      size_t tail_records, T usual) {
  if (!tail_column.empty()) {
    if (column->empty()) column->resize(records_before, usual);
    column->insert(column->end(), tail_column.begin(), tail_column.end());
  } else if (!column->empty()) {
    column->resize(records_before + tail_records, usual);
  }
}

// The table's lazy columns (flow_table.h): its records' sampling rates, a rate of 0 (unknown)
// held as 1, and the high halves of their byte counts and durations (the low halves are columns
// of their own, always held). A duration is end - start modulo 2^64, so any two times, in either
// order, read back exactly; only a record of 4.3 s or more (or one that ends before it starts)
// needs a high half.
// Function objects, not functions: AppendLazy takes them by type, and a function's pointer was
// called per record rather than inlined (callgrind, tiny).
inline constexpr auto HeldSamplingRate = [](uint32_t n) { return std::max<uint32_t>(1, n); };
inline constexpr auto LowHalf = [](uint64_t v) { return static_cast<uint32_t>(v); };
inline constexpr auto HighHalf = [](uint64_t v) { return static_cast<uint32_t>(v >> 32); };
inline uint64_t DurationOf(int64_t start_ns, int64_t end_ns) {
  return static_cast<uint64_t>(end_ns) - static_cast<uint64_t>(start_ns);
}
inline int64_t EndOf(int64_t start_ns, uint64_t duration) {
  return static_cast<int64_t>(static_cast<uint64_t>(start_ns) + duration);
}

}  // namespace prism::flow
