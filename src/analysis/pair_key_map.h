// File: analysis/pair_key_map.h
// A flat open-addressing hash map from a 64-bit endpoint pair key (PairKey in
// jobs/job_recognition.h) to a dense 32-bit index, for the per-record passes of the analysis
// (distinct pairs, rows per pair): one probe of a cache-resident table per record, where the
// previous code sorted an 8- or 16-byte key per record (docs/performance.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace prism::analysis {

class PairKeyMap {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // Returns the index of `key`, inserting it with the next free index (size()) if absent.
  uint32_t FindOrInsert(uint64_t key) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.index == kNone) {
        s = {key, static_cast<uint32_t>(size_)};
        keys_.push_back(key);
        return static_cast<uint32_t>(size_++);
      }
      if (s.key == key) return s.index;
    }
  }
  // The index of `key`, or kNone.
  uint32_t Find(uint64_t key) const {
    if (slots_.empty()) return kNone;
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.index == kNone || s.key == key) return s.index;
    }
  }
  // Asks for the slot `key` hashes to ahead of its lookup: a loop over records whose pairs are
  // spread over a table larger than the cache calls this a few records ahead, so the misses of
  // several lookups overlap. Only a hint: the answer of Find is the same without it.
  void Prefetch(uint64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Hash(key) & mask_]);
  }
  size_t size() const { return size_; }
  // Keys in the order of their indices.
  const std::vector<uint64_t>& keys() const { return keys_; }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t index = kNone;
  };
  static size_t Hash(uint64_t k) {  // murmur3 finaliser
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.index == kNone) continue;
      size_t i = Hash(s.key) & mask_;
      while (slots_[i].index != kNone) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::vector<uint64_t> keys_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace prism::analysis
