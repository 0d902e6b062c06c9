// File: core/chunked_vector.h
// A list that grows one big block (core/big_blocks.h, 4 MiB) at a time: growing copies nothing
// (no doubling that holds two copies at a memory peak), and each chunk is a whole number of huge
// pages, taken from the blocks a stage before gave back when there are any.
//
// It holds the bandwidth rule's grid cells (diagnosis/rules/bandwidth_cells.h), added one by one
// from several threads at once. Chunks of 112 KiB from the heap (below glibc's mmap threshold, so
// that the one malloc arena of analyze's --threads did not map and unmap each) were 4 KiB pages:
// the heap that the grid grows into has just been trimmed (pipeline/analyze_window.cc), and the
// trim leaves the huge pages it cuts into split. At 10,240 GPUs on two threads the cells took
// ~3,500 faults, each dear on a virtual machine, and a 4 KiB page per cell's neighbourhood for the
// open bin's scattered updates (docs/performance.md).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/big_blocks.h"

namespace prism {

template <typename T>
class ChunkedVector {
  // Elements are copied as bytes and never destroyed.
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  static_assert(sizeof(T) <= kBigBlockMinBytes);

 public:
  // One big block per chunk, so that the block is whole huge pages; as many elements as a power
  // of two allows, so that finding element i is a shift and a mask. The bandwidth rule reaches
  // its cells by index several times per record: with 74,898 cells of 56 bytes per chunk, each a
  // division by the constant (a multiply and shifts), the indexing was 215 M of the cell grid's
  // 2.30 G instructions at 10,240 GPUs, and 65,536 per chunk saved 89 M of them. The price is the
  // block's unused tail (0.5 MiB of 4 for cells).
  static constexpr size_t kChunkElements = std::bit_floor(kBigBlockMinBytes / sizeof(T));

  ChunkedVector() = default;
  ChunkedVector(const ChunkedVector& other) { AppendAll(other); }
  ChunkedVector(ChunkedVector&& other) noexcept
      : chunks_(std::move(other.chunks_)), size_(std::exchange(other.size_, 0)) {
    other.chunks_.clear();
  }
  ChunkedVector& operator=(const ChunkedVector& other) {
    if (this != &other) {
      Free();
      AppendAll(other);
    }
    return *this;
  }
  ChunkedVector& operator=(ChunkedVector&& other) noexcept {
    if (this != &other) {
      Free();
      chunks_ = std::move(other.chunks_);
      other.chunks_.clear();
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~ChunkedVector() { Free(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T& operator[](size_t i) { return chunks_[i / kChunkElements][i % kChunkElements]; }
  const T& operator[](size_t i) const { return chunks_[i / kChunkElements][i % kChunkElements]; }

  // Appends a value-initialized element (as std::deque::emplace_back() does).
  T& emplace_back() {
    if (size_ == chunks_.size() * kChunkElements)
      chunks_.push_back(static_cast<T*>(TakeBigBlock(kBigBlockMinBytes)));
    T* slot = chunks_.back() + size_ % kChunkElements;
    ++size_;
    return *::new (slot) T();
  }
  void push_back(const T& value) { emplace_back() = value; }

  // Passes every element, in order, to fn(T&), giving back each chunk once its elements are
  // passed: one list's elements go to another without both being held whole (the other's next
  // chunk is the block just given back). Leaves the list empty.
  template <typename Fn>
  void Drain(Fn fn) {
    for (size_t c = 0; c < chunks_.size(); ++c) {
      const size_t n = std::min(kChunkElements, size_ - c * kChunkElements);
      for (size_t i = 0; i < n; ++i) fn(chunks_[c][i]);
      GiveBackBigBlock(std::exchange(chunks_[c], nullptr), kBigBlockMinBytes);
    }
    chunks_.clear();
    size_ = 0;
  }

 private:
  void AppendAll(const ChunkedVector& other) {
    for (size_t c = 0; c < other.chunks_.size(); ++c) {
      chunks_.push_back(static_cast<T*>(TakeBigBlock(kBigBlockMinBytes)));
      const size_t n = std::min(kChunkElements, other.size_ - c * kChunkElements);
      std::memcpy(static_cast<void*>(chunks_.back()), other.chunks_[c], n * sizeof(T));
    }
    size_ = other.size_;
  }
  void Free() {
    for (T* chunk : chunks_)
      if (chunk != nullptr) GiveBackBigBlock(chunk, kBigBlockMinBytes);
    chunks_.clear();
    size_ = 0;
  }

  // Each chunk holds kChunkElements but the last, so an index's chunk is found by division.
  std::vector<T*> chunks_;
  size_t size_ = 0;
};

}  // namespace prism
