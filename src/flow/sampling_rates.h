// File: flow/sampling_rates.h
// A table's column of per-record sampling rates (1 in N), held only once a record is sampled.
// Nearly all input is unsampled (RDMA flow records from switches, pcap), and there a rate per
// record is 4 bytes written, sorted and held to the analysis's memory peak for nothing. So the
// column stays empty while every record so far has a rate of 0 (unknown) or 1, both of which
// mean "not sampled"; the first sampled record fills it with 1 for the records before it, and from
// then on a rate of 0 is held as 1 too (so one table holds the same column however its records
// were split on the way in: flow/flow_table_tail.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/big_blocks.h"

namespace prism::flow {

// Appends the rates of the records that follow the first `records_before` of a table (which are
// all in `column`, or none of them sampled).
inline void AppendSamplingRates(BigVector<uint32_t>* column, size_t records_before,
                                std::span<const uint32_t> rates) {
  if (column->empty()) {
    if (std::all_of(rates.begin(), rates.end(), [](uint32_t n) { return n <= 1; })) return;
    column->resize(records_before, 1);
  }
  const size_t at = column->size();
  column->resize(at + rates.size());
  std::transform(rates.begin(), rates.end(), column->begin() + ptrdiff_t(at),
                 [](uint32_t n) { return std::max<uint32_t>(1, n); });
}

// The rate of record `r` of a table whose column is `column`: 1 when it is empty.
inline uint32_t SamplingRateOf(std::span<const uint32_t> column, size_t r) {
  return column.empty() ? 1 : column[r];
}

}  // namespace prism::flow
