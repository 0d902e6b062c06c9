#include "core/ntp_time.h"

#include <gtest/gtest.h>

#include <random>

namespace prism {
namespace {

// Decoding ceil(ns * 2^32 / 1e9) with a floor is exact because 2^32 / 1e9 > 1 (one fraction step
// is 0.23 ns). Checked on every ns of the first and last 20 ms of a second, a 1-in-97 sweep of the
// rest and random values (all 1e9 take seconds; the property only depends on the sub-second part).
TEST(NtpTime, SubSecondNanosecondsRoundTripExactly) {
  const int64_t base = 1'700'000'000'000'000'000;
  int64_t mismatches = 0;
  auto check = [&](int64_t ns) { mismatches += NtpToUnixNs(UnixNsToNtp(base + ns)) != base + ns; };
  for (int64_t ns = 0; ns < 20'000'000; ++ns) check(ns);
  for (int64_t ns = 1'000'000'000 - 20'000'000; ns < 1'000'000'000; ++ns) check(ns);
  for (int64_t ns = 0; ns < 1'000'000'000; ns += 97) check(ns);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 1'000'000; ++i) check(static_cast<int64_t>(rng() % 1'000'000'000));
  EXPECT_EQ(mismatches, 0);
}

TEST(NtpTime, EraBoundariesAndKnownValues) {
  // 1970-01-01 is NTP second 2208988800.
  EXPECT_EQ(UnixNsToNtp(0), uint64_t{2'208'988'800} << 32);
  // Half a second is fraction 2^31.
  EXPECT_EQ(UnixNsToNtp(500'000'000) & 0xFFFFFFFFu, 0x80000000u);
  for (int64_t s : {-60'000'000ll, -1ll, 0ll, 1'700'000'000ll, 2'085'978'495ll, 2'085'978'496ll,
                    4'000'000'000ll}) {
    for (int64_t ns : {0ll, 1ll, 999'999'999ll}) {
      int64_t t = s * 1'000'000'000 + ns;
      EXPECT_EQ(NtpToUnixNs(UnixNsToNtp(t)), t) << s << " " << ns;
    }
  }
}

}  // namespace
}  // namespace prism
