// File: ingest/sflow/xdr_reader.h
// A bounds-checked reader of the XDR encoding sFlow v5 uses (RFC 4506: big-endian 32-bit words,
// 64-bit hypers, opaque data padded to a multiple of 4 bytes). Every read says whether the bytes
// were there; the position is an offset into the buffer the reader was made for, plus `base`, so
// problem messages can name the byte offset in the whole datagram. No allocation, no exceptions:
// fed straight from sockets, captures and the fuzzer (sflow/sflow_format.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace prism::ingest {

class XdrReader {
 public:
  explicit XdrReader(std::span<const uint8_t> data, size_t base = 0) : data_(data), base_(base) {}

  // Offset of the next byte, counted from the start of the datagram.
  size_t offset() const { return base_ + pos_; }
  size_t remaining() const { return data_.size() - pos_; }

  bool U32(uint32_t* v) {
    if (remaining() < 4) return false;
    const uint8_t* p = data_.data() + pos_;
    *v = uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
    pos_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    uint32_t hi = 0, lo = 0;
    if (remaining() < 8) return false;
    U32(&hi);
    U32(&lo);
    *v = uint64_t{hi} << 32 | lo;
    return true;
  }
  // `n` bytes, then the padding to the next multiple of 4 (which must be there too).
  bool Opaque(size_t n, std::span<const uint8_t>* out) {
    const size_t padded = (n + 3) & ~size_t{3};
    if (n > remaining() || padded > remaining()) return false;
    *out = data_.subspan(pos_, n);
    pos_ += padded;
    return true;
  }
  bool Skip(size_t n) {
    if (n > remaining()) return false;
    pos_ += n;
    return true;
  }

 private:
  std::span<const uint8_t> data_;
  size_t base_;
  size_t pos_ = 0;
};

}  // namespace prism::ingest
