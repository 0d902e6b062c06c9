// File: core/ntp_time.h
// NTP timestamps (RFC 7011 dateTimeMicroseconds / dateTimeNanoseconds: seconds since 1900 above a
// 32-bit binary fraction) <-> Unix epoch ns, as the IPFIX writer (io/ipfix_file.h) writes them and
// the export decoder (ingest/ipfix/export_decoder.h) reads them. Exact to the ns for 1968..2104:
// seconds below 2^31 are read as era 1 (2036-02-07 onwards), and the fraction is written rounded
// up, ceil(ns * 2^32 / 1e9), so the reader's floor(frac * 1e9 / 2^32) gives the ns back
// (2^32 / 1e9 > 1).
#pragma once

#include <cstdint>

namespace prism {

inline constexpr int64_t kNtpUnixOffsetS = 2'208'988'800;  // 1900-01-01 to 1970-01-01

inline constexpr uint64_t UnixNsToNtp(int64_t unix_ns) {
  constexpr int64_t kNsPerSecond = 1'000'000'000;
  int64_t s = unix_ns / kNsPerSecond;
  int64_t rem = unix_ns % kNsPerSecond;
  if (rem < 0) {
    rem += kNsPerSecond;
    s -= 1;
  }
  const uint64_t ntp_s = static_cast<uint64_t>(s + kNtpUnixOffsetS) & 0xFFFF'FFFFu;  // era wraps
  const uint64_t frac = ((static_cast<uint64_t>(rem) << 32) + kNsPerSecond - 1) / kNsPerSecond;
  return (ntp_s << 32) | frac;
}

inline constexpr int64_t NtpToUnixNs(uint64_t ntp) {
  constexpr int64_t kNsPerSecond = 1'000'000'000;
  int64_t s = static_cast<int64_t>(ntp >> 32);
  if (s < 0x8000'0000LL) s += int64_t{1} << 32;  // era 1: 2036-02-07 onwards
  const uint64_t frac = ntp & 0xFFFF'FFFFu;
  const int64_t ns = static_cast<int64_t>((frac * kNsPerSecond) >> 32);
  return (s - kNtpUnixOffsetS) * kNsPerSecond + ns;
}

}  // namespace prism
