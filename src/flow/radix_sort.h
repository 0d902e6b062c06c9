// File: flow/radix_sort.h
// The sort of the window's rows by start (FlowTable::SortByStart) is a sort of 64-bit keys,
// (start - min start) above the row number, on the start bits: a stable LSD radix sort, a few
// linear passes where a comparison sort of row indices took several times longer.
#pragma once

#include <cstdint>
#include <vector>

#include "core/big_blocks.h"

namespace prism::flow {

// Sorts `keys` by their bits [low_bit, low_bit + bits), stable: keys equal on those bits keep
// their order. Digits as wide as the bits allow in as few passes as possible (12 bits: 36 bits of
// start, a minute in ns, in 3 passes). With `threads` > 1 each pass counts and scatters runs of
// the keys on the threads (each run's keys go after the earlier runs' of the same digit, so the
// order is the one thread's). Working storage: one more vector of keys->size(), a kept block.
void RadixSortByBits(BigVector<uint64_t>* keys, int low_bit, int bits, int threads);

}  // namespace prism::flow
