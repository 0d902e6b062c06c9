// File: flow/lazy_column.h
// A column of a table held only once a record's value differs from the column's usual one.
// Nearly all input never does: a rate of 1 in 1 (RDMA flow records from switches, pcap), bytes
// below 4 GiB (the high half of a record's 64-bit byte count). There such a column would be
// 4 bytes per record written, sorted and held to the analysis's memory peak for nothing. So it
// stays empty while every record so far holds the usual value, and the first that does not fills
// it with the usual value for the records before it (flow/flow_table.h).
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
    if (std::all_of(values.begin(), values.end(), [&](const auto& v) { return held(v) == usual; }))
      return;
    column->resize(records_before, usual);
  }
  const size_t at = column->size();
  column->resize(at + values.size());
  std::transform(values.begin(), values.end(), column->begin() + ptrdiff_t(at), held);
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

// The table's two lazy columns (flow_table.h): its records' sampling rates, a rate of 0
// (unknown) held as 1, and the high halves of their byte counts (the low halves are a column of
// their own, always held).
inline uint32_t HeldSamplingRate(uint32_t n) { return std::max<uint32_t>(1, n); }
inline uint32_t HighBytes(uint64_t bytes) { return static_cast<uint32_t>(bytes >> 32); }

}  // namespace prism::flow
