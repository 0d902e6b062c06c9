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
// start, a minute in ns, in 3 passes). With `threads` > 1 the keys are sorted by their top digit
// in one pass (runs of the keys counted and scattered on the threads, each run's keys after the
// earlier runs' of the same digit), then each top digit's bucket by the other bits on its own,
// the buckets shared out on the threads; when some bucket is too large for the cache, every pass
// runs over all the keys that way instead. Either way the order is the one thread's. Working
// storage: one more vector of keys->size(), a kept block.
void RadixSortByBits(BigVector<uint64_t>* keys, int low_bit, int bits, int threads);

}  // namespace prism::flow
