// File: core/ip_prefix.h
// An address prefix ("10.0.0.0/8", "fd00::/8", or one address), over IpAddr's 16-byte form
// (IPv4 as ::ffff:a.b.c.d, so an IPv4 /n is the 128-bit /96+n). Used where input is filtered by
// address: the UDP collector's exporter allow-list.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

#include "core/ip_addr.h"

namespace prism {

struct IpPrefix {
  IpAddr addr;
  int bits = 128;  // of the 128-bit form

  // "ADDR" or "ADDR/LEN" (LEN 0-32 for IPv4, 0-128 for IPv6); nullopt for anything else.
  static std::optional<IpPrefix> Parse(std::string_view text) {
    const size_t slash = text.find('/');
    auto ip = IpAddr::Parse(text.substr(0, slash));
    if (!ip) return std::nullopt;
    IpPrefix p{*ip, 128};
    if (slash != std::string_view::npos) {
      const std::string_view len_text = text.substr(slash + 1);
      int len = -1;
      const auto [end, ec] =
          std::from_chars(len_text.data(), len_text.data() + len_text.size(), len);
      const int max_len = ip->is_v4() ? 32 : 128;
      if (ec != std::errc() || end != len_text.data() + len_text.size() || len < 0 ||
          len > max_len) {
        return std::nullopt;
      }
      p.bits = ip->is_v4() ? 96 + len : len;
    }
    return p;
  }

  bool Contains(const IpAddr& a) const {
    const auto& x = addr.bytes();
    const auto& y = a.bytes();
    int left = bits;
    for (size_t i = 0; i < 16 && left > 0; ++i, left -= 8) {
      const uint8_t mask = left >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - left));
      if ((x[i] & mask) != (y[i] & mask)) return false;
    }
    return true;
  }
};

}  // namespace prism
