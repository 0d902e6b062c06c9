// File: core/chunked_vector.h
// A list that grows a chunk of ~112 KiB at a time: growing copies nothing (no doubling that holds
// two copies at a memory peak) and costs one allocation per chunk.
//
// It replaces a std::deque where elements are added one by one from several threads at once:
// libstdc++'s deque allocates a node per 512 bytes (9 cells of the bandwidth rule's grid), and with
// the process on one malloc arena (analyze's --threads) each of those allocations could wait on
// the arena's lock: at 10,240 GPUs the grid's two builders made ~33,000 of them and slept on the
// lock ~1,000 times each. Chunks stay below glibc's mmap threshold (128 KiB), so they come from the
// heap, as the deque's nodes did.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace prism {

template <typename T>
class ChunkedVector {
 public:
  static constexpr size_t kChunkElements = std::max<size_t>(1, (size_t{112} << 10) / sizeof(T));

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T& operator[](size_t i) { return chunks_[i / kChunkElements][i % kChunkElements]; }
  const T& operator[](size_t i) const { return chunks_[i / kChunkElements][i % kChunkElements]; }

  // Appends a value-initialized element (as std::deque::emplace_back() does).
  T& emplace_back() {
    if (size_ % kChunkElements == 0) chunks_.emplace_back().reserve(kChunkElements);
    ++size_;
    return chunks_.back().emplace_back();
  }
  void push_back(const T& value) { emplace_back() = value; }

  // Passes every element, in order, to fn(T&), freeing each chunk once its elements are passed:
  // one list's elements go to another without both being held whole. Leaves the list empty.
  template <typename Fn>
  void Drain(Fn fn) {
    for (std::vector<T>& chunk : chunks_) {
      for (T& value : chunk) fn(value);
      std::vector<T>().swap(chunk);
    }
    chunks_.clear();
    size_ = 0;
  }

 private:
  // Each chunk holds kChunkElements but the last; an index's chunk is found by division. A copied
  // list's last chunk may have less capacity: it grows to kChunkElements and no further.
  std::vector<std::vector<T>> chunks_;
  size_t size_ = 0;
};

}  // namespace prism
