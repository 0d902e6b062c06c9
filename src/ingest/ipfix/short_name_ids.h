// File: ingest/ipfix/short_name_ids.h
// The ids of short names (observation points: switch names), found without a string hash or a
// call per lookup. The export decoder looks up a record's point name once per record; the names
// interleave record after record (one message carries many switches' records) and a fabric has
// hundreds to thousands of them (scale-10k: 320 leaves and its spines; 100,000 GPUs: 3,200
// leaves).
//
// A name of up to 32 bytes is held as its length and four 8-byte words read at offsets 0, 8, 16
// and 24, each moved back to end at the name's last byte when it would pass it: for a given
// length the words cover every byte, so equal words and lengths are equal names, and every read
// is a fixed-size load inside the name (no call to memcpy or memcmp). Open addressing with linear
// probing, never evicting: every short name seen is answered from here after its first record.
// The direct-mapped cache of 256 names this replaces missed on many of scale-10k's switches and
// spent a third of its time in variable-size copies before its hash.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/flow_record.h"

namespace prism::ingest {

class ShortNameIds {
 public:
  static constexpr size_t kMaxNameBytes = 32;
  // Names kept at most (beyond them, Find misses for names not yet kept).
  static constexpr size_t kMaxNames = 65536;

  // The id given to `name`, or kNoPoint when it was never given (or is longer than
  // kMaxNameBytes).
  PointId Find(std::string_view name) const {
    if (name.size() > kMaxNameBytes || slots_.empty()) return kNoPoint;
    const Key key = KeyOf(name);
    for (size_t i = SlotOf(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id == kNoPoint) return kNoPoint;
      if (s.key == key) return s.id;
    }
  }

  // Keeps `id` for `name` (a name not kept yet). Long names and names past kMaxNames are not kept.
  void Insert(std::string_view name, PointId id) {
    if (name.size() > kMaxNameBytes || size_ >= kMaxNames || id == kNoPoint) return;
    if (2 * (size_ + 1) > slots_.size()) Grow();
    Place(KeyOf(name), id);
    ++size_;
  }

  size_t size() const { return size_; }

 private:
  struct Key {
    uint64_t words[4];
    uint64_t length;
    bool operator==(const Key&) const = default;
  };
  struct Slot {
    Key key{};
    PointId id = kNoPoint;
  };

  static uint64_t Load8(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }

  // Built word by word in registers: built as an array, the words were stored as one vector and
  // read back one by one for the hash, a store the loads could not be forwarded from.
  static Key KeyOf(std::string_view name) {
    const char* p = name.data();
    const size_t n = name.size();
    if (n < 8) {
      uint64_t head = 0;
      for (size_t i = 0; i < n; ++i) head |= uint64_t(uint8_t(p[i])) << (8 * i);
      return Key{{head, 0, 0, 0}, n};  // the bytes from the low end of one word
    }
    const size_t last = n - 8;
    const uint64_t w0 = Load8(p), w1 = Load8(p + std::min<size_t>(8, last)),
                   w2 = Load8(p + std::min<size_t>(16, last)), w3 = Load8(p + last);
    return Key{{w0, w1, w2, w3}, n};
  }

  static size_t Hash(const Key& k) {
    const uint64_t h = (k.words[0] * 0x9E3779B97F4A7C15ull) ^
                       (k.words[3] * 0xC2B2AE3D27D4EB4Full) ^
                       (k.words[1] * 0x165667B19E3779F9ull) ^ k.length;
    return static_cast<size_t>(h);
  }
  // A slot from the hash's top bits: a product's top bits depend on every bit of its factor,
  // where its low bits see only the name's first bytes (shared by many switch names).
  size_t SlotOf(const Key& k) const { return Hash(k) >> shift_; }

  void Place(const Key& key, PointId id) {
    size_t i = SlotOf(key);
    while (slots_[i].id != kNoPoint) i = (i + 1) & mask_;
    slots_[i] = Slot{key, id};
  }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 512 : 2 * old.size(), Slot{});
    mask_ = slots_.size() - 1;
    shift_ = 64 - std::countr_zero(slots_.size());
    for (const Slot& s : old)
      if (s.id != kNoPoint) Place(s.key, s.id);
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace prism::ingest
