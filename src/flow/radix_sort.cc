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

void Scatter(const uint64_t* in, size_t begin, size_t end, uint64_t* out, size_t* c, int shift,
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
      const uint64_t k = in[i];
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
  for (size_t i = begin; i < end; ++i) out[c[(in[i] >> shift) & d.mask]++] = in[i];
}

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
    Scatter(keys->data(), 0, keys->size(), scratch.data(), c, shift, d);
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
      Scatter(in, begin(t), begin(t + 1), out, c, shift, d);
    });
    keys->swap(scratch);
  }
}

}  // namespace

void RadixSortByBits(BigVector<uint64_t>* keys, int low_bit, int bits, int threads) {
  const Digits d = DigitsFor(bits);
  const size_t runs = RowRunsFor(keys->size(), threads);
  if (runs == 1) {
    SortOnOneThread(keys, low_bit, d);
  } else {
    SortOnRuns(keys, low_bit, d, runs);
  }
}

}  // namespace prism::flow
