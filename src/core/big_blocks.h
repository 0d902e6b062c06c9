// File: core/big_blocks.h
// Large buffers reused from stage to stage instead of mapped afresh. The window's columns, the
// sort's keys and scratch and the per-record arrays of job recognition and transfers are tens to
// hundreds of MB each. glibc maps every block above 32 MB on its own and unmaps it when freed, so
// each stage's buffers were new pages the kernel zeroed again on first touch: at 100,000 GPUs
// (48.5 M records) that zeroing was 77 ns of the 696 ns per record (docs/performance.md).
//
// Blocks of at least kBigBlockMinBytes come from here: a freed block is kept (resident, its pages
// already touched) and handed out again to the next request it can hold, cut to that request's
// pages (the rest kept as a block of its own). Kept blocks are resident memory that nothing uses,
// so whoever is about to grow memory elsewhere (the transfers on the heap, diagnosis, the report)
// calls ReleaseBigBlocks first: kept memory never sits beside a stage's own peak. A window's
// analysis (pipeline/analyze_window.h) ends with one, so nothing stays kept between windows;
// code that frees big buffers outside it leaves them kept until the next. Thread-safe.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <vector>

namespace prism {

inline constexpr size_t kBigBlockMinBytes = size_t{4} << 20;

// A block of at least `bytes` (>= kBigBlockMinBytes), page-aligned: cut from the smallest kept
// block that holds it; else the largest kept block grown to the size; else a fresh mapping, which
// asks for transparent huge pages.
// Throws std::bad_alloc when out of memory, as operator new does.
void* TakeBigBlock(size_t bytes);
// Gives back a block TakeBigBlock returned for `bytes`: kept for the next TakeBigBlock.
void GiveBackBigBlock(void* block, size_t bytes);
// Unmaps every kept block (their pages go back to the system).
void ReleaseBigBlocks();
// Keeps only the blocks that the coming `requests` (bytes each, in order, all live at once) would
// be handed, the smallest that fits each; unmaps the others. For a stage that knows what the next
// ones ask for: what they will not take is not left resident meanwhile.
void KeepBigBlocksFor(std::initializer_list<size_t> requests);
// What is kept now: bytes and blocks (for tests and --timings).
size_t KeptBigBlockBytes();
size_t KeptBigBlocks();

// An allocator that takes blocks of kBigBlockMinBytes and more from the kept blocks; smaller
// ones from the heap as std::allocator does. Elements are value-initialized as usual.
template <typename T>
struct BigBlockAllocator {
  using value_type = T;
  BigBlockAllocator() = default;
  template <typename U>
  BigBlockAllocator(const BigBlockAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator

  T* allocate(size_t n) {
    if (n * sizeof(T) >= kBigBlockMinBytes) return static_cast<T*>(TakeBigBlock(n * sizeof(T)));
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) >= kBigBlockMinBytes) {
      GiveBackBigBlock(p, n * sizeof(T));
      return;
    }
    std::allocator<T>().deallocate(p, n);
  }
  template <typename U>
  bool operator==(const BigBlockAllocator<U>&) const { return true; }
};

// A vector of one of those buffers (a column, a per-record array).
template <typename T>
using BigVector = std::vector<T, BigBlockAllocator<T>>;

// n elements left uninitialized, for a buffer whose every element is written before it is read
// (no pass of zeros over it first), in a kept block when large. Owns its block; not copyable.
template <typename T>
class BigArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  explicit BigArray(size_t n) : n_(n), data_(BigBlockAllocator<T>().allocate(n)) {}
  ~BigArray() { BigBlockAllocator<T>().deallocate(data_, n_); }
  BigArray(const BigArray&) = delete;
  BigArray& operator=(const BigArray&) = delete;

  T& operator[](size_t i) const { return data_[i]; }
  T* data() const { return data_; }
  size_t size() const { return n_; }

 private:
  size_t n_;
  T* data_;
};

}  // namespace prism
