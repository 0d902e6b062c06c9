#include "flow/radix_sort.h"

#include <algorithm>
#include <cstddef>
#include <utility>

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
    for (uint64_t k : *keys) scratch[c[(k >> shift) & d.mask]++] = k;
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
      for (size_t i = begin(t); i < begin(t + 1); ++i) out[c[(in[i] >> shift) & d.mask]++] = in[i];
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
