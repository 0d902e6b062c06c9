// File: core/ip_addr.h
// An IPv4 or IPv6 endpoint address, stored as 16 bytes (IPv4 as ::ffff:a.b.c.d) so both families
// share one key type. Parsing goes through inet_pton; printing through inet_ntop, IPv4 through
// {fmt}.
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace prism {

class IpAddr {
 public:
  IpAddr() = default;
  static IpAddr FromV4(uint32_t host_order);
  static IpAddr FromV6(const uint8_t bytes[16]);
  // Returns nullopt unless `text` is a complete IPv4 dotted quad or IPv6 address.
  static std::optional<IpAddr> Parse(std::string_view text);

  bool is_v4() const;
  uint32_t v4() const;  // host order; only meaningful when is_v4()
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }
  std::string ToString() const;

  // As two 8-byte words: the defaulted comparisons of the byte array call memcmp, and interning
  // every record's two addresses made that call ~2% of a whole analysis. Same results: equal
  // bytes, and the order of the bytes read as one big-endian number (lexicographic).
  friend bool operator==(const IpAddr& a, const IpAddr& b) {
    return ((a.Word(0) ^ b.Word(0)) | (a.Word(1) ^ b.Word(1))) == 0;
  }
  friend std::strong_ordering operator<=>(const IpAddr& a, const IpAddr& b) {
    if (a.Word(0) != b.Word(0)) return a.BigEndianWord(0) <=> b.BigEndianWord(0);
    return a.BigEndianWord(1) <=> b.BigEndianWord(1);
  }

 private:
  uint64_t Word(int i) const {
    uint64_t w;
    std::memcpy(&w, bytes_.data() + 8 * i, 8);
    return w;
  }
  uint64_t BigEndianWord(int i) const {
    if constexpr (std::endian::native == std::endian::little) return __builtin_bswap64(Word(i));
    return Word(i);
  }

  std::array<uint8_t, 16> bytes_{};
};

inline std::string format_as(const IpAddr& a) { return a.ToString(); }

struct IpAddrHash {
  size_t operator()(const IpAddr& a) const {
    uint64_t lo, hi;
    std::memcpy(&lo, a.bytes().data(), 8);
    std::memcpy(&hi, a.bytes().data() + 8, 8);
    uint64_t h = (lo * 0x9E3779B97F4A7C15ull) ^ (hi + 0x632BE59BD9B4E019ull + (lo << 6));
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

}  // namespace prism
