// File: flow/radix_sort.h
// The sort of the window's rows by start (FlowTable::SortByStart) is a sort of 64-bit keys,
// (start - min start) above the row number, on the start bits: a stable LSD radix sort, a few
// linear passes where a comparison sort of row indices took several times longer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/big_blocks.h"

namespace prism::flow {

// Sorts `keys` by their bits [low_bit, low_bit + bits), stable: keys equal on those bits keep
// their order. Digits as wide as the bits allow in as few passes as possible (12 bits: 36 bits of
// start, a minute in ns, in 3 passes). With `threads` > 1 the keys are sorted by their top digit
// in one pass (runs of the keys counted and scattered on the threads, each run's keys after the
// earlier runs' of the same digit), then each top digit's bucket by the other bits on its own,
// the buckets shared out on the threads; when some bucket is too large for the cache, every pass
// runs over all the keys that way instead. Either way the order is the one thread's. Working
// storage: one more vector of keys->size(), a kept block.
void RadixSortByBits(BigVector<uint64_t>* keys, int low_bit, int bits, int threads);

// Sorts `start` in place, stable, and writes into rows[i] the row the i-th start came from (the
// row numbers in (start, row) order). `lo` is the least start, `start_bits` the width of the
// largest start - lo and `row_bits` that of the largest row number (together at most 64 bits).
// Each key, (start - lo) above the row number, is made as it is scattered by its top digit, on
// the threads (no pass that writes every key first, no second vector of keys: 8 bytes per row of
// working storage); then each top digit's bucket is sorted within the cache and its starts and
// row numbers are written out from the keys (the starts need no gather afterwards). Starts
// crowded into a few top digits have their keys made first and sorted with RadixSortByBits (16
// bytes per row). Same result for any `threads`.
void SortStartsAndRows(std::span<int64_t> start, int64_t lo, int row_bits, int start_bits,
                       int threads, std::span<uint32_t> rows);

}  // namespace prism::flow
