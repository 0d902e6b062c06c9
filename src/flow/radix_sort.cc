#include "flow/radix_sort.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "flow/row_runs.h"

namespace prism::flow {
namespace {

struct Digits {
  int passes, bits;
  uint64_t mask;
  size_t count() const { return size_t{1} << bits; }
};

Digits DigitsFor(int bits) {
  const int passes = std::max(1, (bits + 11) / 12);
  const int digit_bits = std::max(1, (bits + passes - 1) / passes);
  return {passes, digit_bits, (uint64_t{1} << digit_bits) - 1};
}

// Puts in[begin, end) at out[c[digit]++], in order. A window of 100,000 GPUs has hundreds of MB
// of keys: written one by one, the 4,096 digits' places are 4,096 pages in turn, nearly every key
// misses the TLB and the cache, and each missed line is read before it is written. So there, each
// digit's keys gather in a line-sized buffer first (4,096 of them: 256 KB, within the cache) and
// go out a whole aligned line at a time with streaming stores, which neither read the line nor
// keep it in the cache (the next pass reads the keys from memory anyway). Same places, same
// order. Keys that fit the cache are scattered one by one: streamed out, the next pass would have
// to read them back from memory.
constexpr size_t kStreamedScatterMinKeys = size_t{1} << 21;  // 16 MB of keys

// `key_at(i)` is the i-th key: read from a vector of keys, or made from a row's start as it is
// scattered (SortStartsAndRows).
template <typename KeyAt>
void Scatter(KeyAt key_at, size_t begin, size_t end, uint64_t* out, size_t* c, int shift,
             const Digits& d) {
#if defined(__SSE2__)
  if (end - begin >= kStreamedScatterMinKeys) {
    constexpr size_t kPerLine = 64 / sizeof(uint64_t);
    std::vector<uint64_t> storage(d.count() * kPerLine + kPerLine);
    const size_t misaligned = (reinterpret_cast<uintptr_t>(storage.data()) / 8) % kPerLine;
    uint64_t* lines = storage.data() + (kPerLine - misaligned) % kPerLine;  // 64-byte aligned
    // held: keys in the digit's buffer; room: how many it takes before it is written out (a
    // digit's first write only fills its place up to a line boundary).
    std::vector<uint8_t> held(d.count(), 0), room(d.count());
    for (size_t digit = 0; digit < d.count(); ++digit) {
      const size_t off = (reinterpret_cast<uintptr_t>(out + c[digit]) / 8) % kPerLine;
      room[digit] = uint8_t(kPerLine - off);
    }
    for (size_t i = begin; i < end; ++i) {
      const uint64_t k = key_at(i);
      const size_t digit = (k >> shift) & d.mask;
      uint64_t* buffer = lines + digit * kPerLine;
      buffer[held[digit]++] = k;
      if (held[digit] < room[digit]) continue;
      uint64_t* to = out + c[digit];
      if (held[digit] == kPerLine) {
        const auto* from = reinterpret_cast<const __m128i*>(buffer);
        auto* line = reinterpret_cast<__m128i*>(to);
        for (int q = 0; q < 4; ++q) _mm_stream_si128(line + q, _mm_load_si128(from + q));
      } else {
        std::memcpy(to, buffer, sizeof(uint64_t) * held[digit]);
      }
      c[digit] += held[digit];
      held[digit] = 0;
      room[digit] = kPerLine;
    }
    _mm_sfence();  // the streamed lines are visible before the buffers' last keys are written
    for (size_t digit = 0; digit < d.count(); ++digit) {
      if (held[digit] == 0) continue;
      std::memcpy(out + c[digit], lines + digit * kPerLine, sizeof(uint64_t) * held[digit]);
      c[digit] += held[digit];
    }
    return;
  }
#endif
  for (size_t i = begin; i < end; ++i) {
    const uint64_t k = key_at(i);
    out[c[(k >> shift) & d.mask]++] = k;
  }
}

// Reads the keys of a vector (the passes after the first).
struct KeysIn {
  const uint64_t* in;
  uint64_t operator()(size_t i) const { return in[i]; }
};

// One thread: the counts of every pass in one read of the keys (a digit's count does not depend
// on the keys' order).
void SortOnOneThread(BigVector<uint64_t>* keys, int low_bit, const Digits& d) {
  BigVector<uint64_t> scratch(keys->size());
  std::vector<size_t> count(size_t(d.passes) * d.count());
  for (uint64_t k : *keys)
    for (int p = 0; p < d.passes; ++p)
      ++count[size_t(p) * d.count() + ((k >> (low_bit + p * d.bits)) & d.mask)];
  for (int p = 0; p < d.passes; ++p) {
    size_t* c = count.data() + size_t(p) * d.count();
    size_t sum = 0;
    for (size_t i = 0; i < d.count(); ++i) sum += std::exchange(c[i], sum);
    const int shift = low_bit + p * d.bits;
    Scatter(KeysIn{keys->data()}, 0, keys->size(), scratch.data(), c, shift, d);
    keys->swap(scratch);
  }
}

// Several threads: per pass, each run of keys is counted, then scattered from where its digit's
// keys of the earlier runs end.
void SortOnRuns(BigVector<uint64_t>* keys, int low_bit, const Digits& d, size_t runs) {
  const size_t n = keys->size();
  BigVector<uint64_t> scratch(n);
  std::vector<size_t> count(runs * d.count());
  auto begin = [&](size_t t) { return n * t / runs; };
  for (int p = 0; p < d.passes; ++p) {
    const int shift = low_bit + p * d.bits;
    const uint64_t* in = keys->data();
    std::fill(count.begin(), count.end(), 0);
    OnRuns(runs, [&](size_t t) {
      size_t* c = count.data() + t * d.count();
      for (size_t i = begin(t); i < begin(t + 1); ++i) ++c[(in[i] >> shift) & d.mask];
    });
    size_t sum = 0;
    for (size_t digit = 0; digit < d.count(); ++digit)
      for (size_t t = 0; t < runs; ++t) sum += std::exchange(count[t * d.count() + digit], sum);
    uint64_t* out = scratch.data();
    OnRuns(runs, [&](size_t t) {
      size_t* c = count.data() + t * d.count();
      Scatter(KeysIn{in}, begin(t), begin(t + 1), out, c, shift, d);
    });
    keys->swap(scratch);
  }
}

// Keys [lo, hi) of `keys`, all of one top digit, by bits [low_bit, low_bit + bits): LSD passes of
// 8-bit digits between the keys and `tmp` (at least hi - lo keys), stable, all passes counted in
// one read, a pass whose digit is the same for every key skipped. Returns where the sorted keys
// are: keys + lo or tmp. A bucket of a minute's keys is a few thousand keys: in the cache, so
// these passes cost no memory traffic.
const uint64_t* SortBucket(uint64_t* keys, size_t lo, size_t hi, int low_bit, int bits,
                           uint64_t* tmp) {
  const size_t n = hi - lo;
  uint64_t* from = keys + lo;
  if (n < 2 || bits <= 0) return from;
  const int passes = (bits + 7) / 8;  // at most 8
  uint32_t count[8][256];  // n <= kMaxBucketKeys
  for (int p = 0; p < passes; ++p) std::fill(count[p], count[p] + 256, 0u);
  for (size_t i = 0; i < n; ++i) {
    for (int p = 0; p < passes; ++p) ++count[p][(from[i] >> (low_bit + 8 * p)) & 0xff];
  }
  uint64_t* to = tmp;
  for (int p = 0; p < passes; ++p) {
    const int shift = low_bit + 8 * p;
    uint32_t* c = count[p];
    if (c[(from[0] >> shift) & 0xff] == n) continue;  // one digit: the order stays
    uint32_t sum = 0;
    for (int d = 0; d < 256; ++d) sum += std::exchange(c[d], sum);
    for (size_t i = 0; i < n; ++i) to[c[(from[i] >> shift) & 0xff]++] = from[i];
    std::swap(from, to);
  }
  return from;
}

// A top digit's bucket larger than this is not sorted on its own (not within the cache).
constexpr size_t kMaxBucketKeys = size_t{1} << 16;

// Sorts every bucket b, keys [begin[b], begin[b + 1]) of `keys`, by bits [low_bit, low_bit +
// bits), the buckets shared out on the runs in runs of about equal keys; then done(sorted, lo,
// hi) with the bucket's sorted keys (in place or in the run's scratch), while they are in the
// cache. `largest`: the most keys of a bucket.
template <typename Done>
void SortBuckets(uint64_t* keys, const std::vector<size_t>& begin, size_t largest, int low_bit,
                 int bits, size_t runs, Done done) {
  const size_t n = begin.back();
  OnRuns(runs, [&](size_t t) {
    // The buckets whose first key falls in this run's share of the keys.
    const size_t first = std::lower_bound(begin.begin(), begin.end() - 1, n * t / runs) - begin.begin();
    const size_t last = std::lower_bound(begin.begin(), begin.end() - 1, n * (t + 1) / runs) - begin.begin();
    std::vector<uint64_t> tmp(largest);
    for (size_t b = first; b < last; ++b) {
      done(SortBucket(keys, begin[b], begin[b + 1], low_bit, bits, tmp.data()), begin[b],
           begin[b + 1]);
    }
  });
}

// Several threads, keys that spread over the top digit: one counted and scattered pass by the
// top digit (SortOnRuns: the only pass over the keys in memory), then each top digit's bucket
// sorted on its own, buckets shared out on the threads in runs of about equal keys. The LSD
// passes over all the keys on two threads went no faster than on one (each pass's scatter is
// bound by memory); here the later passes stay within a cache-sized bucket. False when a bucket
// is too large for that (keys crowded into a few top digits): then nothing was done.
bool SortByTopDigitThenBuckets(BigVector<uint64_t>* keys, int low_bit, int bits, size_t runs) {
  const int top_bits = std::min(bits, 12);
  const int top_shift = low_bit + bits - top_bits;
  const size_t buckets = size_t{1} << top_bits;
  std::vector<size_t> begin(buckets + 1, 0);
  for (uint64_t k : *keys) ++begin[((k >> top_shift) & (buckets - 1)) + 1];
  const size_t largest = *std::max_element(begin.begin(), begin.end());
  if (largest > kMaxBucketKeys) return false;
  for (size_t b = 0; b < buckets; ++b) begin[b + 1] += begin[b];
  SortOnRuns(keys, top_shift, Digits{1, top_bits, buckets - 1}, runs);
  uint64_t* data = keys->data();
  SortBuckets(data, begin, largest, low_bit, bits - top_bits, runs,
              [data](const uint64_t* sorted, size_t lo, size_t hi) {
                if (sorted != data + lo) std::memcpy(data + lo, sorted, (hi - lo) * sizeof(uint64_t));
              });
  return true;
}

}  // namespace

void RadixSortByBits(BigVector<uint64_t>* keys, int low_bit, int bits, int threads) {
  const Digits d = DigitsFor(bits);
  const size_t runs = RowRunsFor(keys->size(), threads);
  if (runs == 1) {
    SortOnOneThread(keys, low_bit, d);
  } else if (!SortByTopDigitThenBuckets(keys, low_bit, bits, runs)) {
    SortOnRuns(keys, low_bit, d, runs);
  }
}

void SortStartsAndRows(std::span<int64_t> start, int64_t lo, int row_bits, int start_bits,
                       int threads, std::span<uint32_t> rows) {
  const size_t n = start.size();
  const size_t runs = RowRunsFor(n, threads);
  const uint64_t row_mask = (uint64_t{1} << row_bits) - 1;
  auto key_of = [&](size_t r) { return (static_cast<uint64_t>(start[r] - lo) << row_bits) | r; };
  // Once every key is made, rows [begin, end) are written from their sorted keys, `sorted`.
  auto write_out = [&](const uint64_t* sorted, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      start[i] = lo + static_cast<int64_t>(sorted[i - begin] >> row_bits);
      rows[i] = static_cast<uint32_t>(sorted[i - begin] & row_mask);
    }
  };
  const int top_bits = std::min(start_bits, 12);
  const Digits top{1, top_bits, (uint64_t{1} << top_bits) - 1};
  const int top_shift = row_bits + start_bits - top_bits;  // in a key
  // Each run's count of each top digit, from the starts (the keys are not made yet).
  std::vector<size_t> count(runs * top.count());
  OnRowRuns(n, threads, [&](size_t begin, size_t end, size_t t) {
    size_t* c = count.data() + t * top.count();
    const int shift = start_bits - top_bits;
    for (size_t r = begin; r < end; ++r) ++c[(static_cast<uint64_t>(start[r] - lo) >> shift) & top.mask];
  });
  std::vector<size_t> bucket_begin(top.count() + 1, 0);
  size_t largest = 0, sum = 0;
  for (size_t digit = 0; digit < top.count(); ++digit) {
    bucket_begin[digit] = sum;
    for (size_t t = 0; t < runs; ++t) sum += std::exchange(count[t * top.count() + digit], sum);
    largest = std::max(largest, sum - bucket_begin[digit]);
  }
  bucket_begin.back() = n;
  if (largest > kMaxBucketKeys) {  // crowded: make the keys, then sort them
    BigVector<uint64_t> keys(n);
    OnRowRuns(n, threads, [&](size_t begin, size_t end, size_t) {
      for (size_t r = begin; r < end; ++r) keys[r] = key_of(r);
    });
    RadixSortByBits(&keys, row_bits, start_bits, threads);
    OnRowRuns(n, threads,
              [&](size_t begin, size_t end, size_t) { write_out(keys.data() + begin, begin, end); });
    return;
  }
  // Every element is written by the scatter before it is read: no pass of zeros first (the
  // first touch of the pages falls in the scatter, on the threads).
  BigArray<uint64_t> keys(n);
  OnRowRuns(n, threads, [&](size_t begin, size_t end, size_t t) {
    Scatter(key_of, begin, end, keys.data(), count.data() + t * top.count(), top_shift, top);
  });
  SortBuckets(keys.data(), bucket_begin, largest, row_bits, start_bits - top_bits, runs,
              [&](const uint64_t* sorted, size_t b_lo, size_t b_hi) {
                write_out(sorted, b_lo, b_hi);
              });
}

}  // namespace prism::flow
