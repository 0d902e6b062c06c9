#include "core/ip_addr.h"

#include <arpa/inet.h>
#include <fmt/compile.h>

namespace prism {

IpAddr IpAddr::FromV4(uint32_t host_order) {
  IpAddr a;
  a.bytes_[10] = 0xff;
  a.bytes_[11] = 0xff;
  a.bytes_[12] = static_cast<uint8_t>(host_order >> 24);
  a.bytes_[13] = static_cast<uint8_t>(host_order >> 16);
  a.bytes_[14] = static_cast<uint8_t>(host_order >> 8);
  a.bytes_[15] = static_cast<uint8_t>(host_order);
  return a;
}

IpAddr IpAddr::FromV6(const uint8_t bytes[16]) {
  IpAddr a;
  std::memcpy(a.bytes_.data(), bytes, 16);
  return a;
}

std::optional<IpAddr> IpAddr::Parse(std::string_view text) {
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
  char buf[INET6_ADDRSTRLEN + 1];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  if (text.find(':') == std::string_view::npos) {
    in_addr v4;
    if (inet_pton(AF_INET, buf, &v4) != 1) return std::nullopt;
    return FromV4(ntohl(v4.s_addr));
  }
  uint8_t v6[16];
  if (inet_pton(AF_INET6, buf, v6) != 1) return std::nullopt;
  return FromV6(v6);
}

bool IpAddr::is_v4() const {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(bytes_.data(), kPrefix, 12) == 0;
}

uint32_t IpAddr::v4() const {
  return (uint32_t{bytes_[12]} << 24) | (uint32_t{bytes_[13]} << 16) | (uint32_t{bytes_[14]} << 8) |
         bytes_[15];
}

std::string IpAddr::ToString() const {
  if (is_v4()) {
    // The dotted quad by {fmt}: glibc's inet_ntop formats IPv4 through sprintf, ~1,700
    // instructions an address, and the report and the network rule's access links print one
    // for every GPU and pair (~80,000 at 10,240 GPUs). The same text (ip_addr_test.cc).
    return fmt::format(FMT_COMPILE("{}.{}.{}.{}"), bytes_[12], bytes_[13], bytes_[14], bytes_[15]);
  }
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, bytes_.data(), buf, sizeof buf);
  return buf;
}

}  // namespace prism
