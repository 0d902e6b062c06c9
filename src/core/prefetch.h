// File: core/prefetch.h
// How far ahead a per-record loop asks for what it will read at random: at 100,000 GPUs a
// window's columns and pair tables are far larger than the cache, so a loop that gathers rows
// listed in another order (a pair's rows, a cell's rows) or looks each record's pair up in a
// large hash table misses on nearly every record. Asking for the record kPrefetchAhead
// iterations ahead (__builtin_prefetch: a hint, never a fault, the results unchanged) lets the
// misses of several records overlap instead of queueing one behind the other. 16: far enough
// for a miss to return meanwhile, near enough for the line to still be there when it is read.
#pragma once

#include <cstddef>

namespace prism {

inline constexpr size_t kPrefetchAhead = 16;

}  // namespace prism
