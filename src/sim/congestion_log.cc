#include "sim/congestion_log.h"

#include <algorithm>
#include <utility>

namespace prism::sim {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

bool Congested(uint32_t transfers, uint64_t bytes, uint64_t squeezed_bytes) {
  return transfers >= uint32_t(CongestionLog::kMinTransfers) && bytes > 0 &&
         double(squeezed_bytes) >= CongestionLog::kMinSqueezedBytesShare * double(bytes);
}

}  // namespace

uint64_t CongestionLog::Key(int leaf, int spine, bool up, int64_t second) {
  if (!first_second_) first_second_ = second;
  // A simulation spans minutes: 2^23 s either side of its first transfer is never reached.
  const uint64_t rel = uint64_t(second - *first_second_ + (int64_t(1) << (kSecondBits - 1)));
  const uint64_t link = (uint64_t(leaf) << 20) | (uint64_t(spine) << 1) | (up ? 1 : 0);
  return (link << kSecondBits) | (rel & ((uint64_t(1) << kSecondBits) - 1));
}

void CongestionLog::Note(int leaf, int spine, bool up, int64_t start_ns, uint64_t bytes,
                         bool squeezed) {
  // Floor division: warm-up transfers start before the epoch's second 0.
  int64_t second = start_ns / kSecondNs - (start_ns % kSecondNs < 0 ? 1 : 0);
  const uint64_t key = Key(leaf, spine, up, second);
  if (key != last_key_[up]) {
    last_key_[up] = key;
    last_[up] = &seconds_[key];
  }
  Second& s = *last_[up];
  ++s.transfers;
  s.bytes += bytes;
  s.squeezed_bytes += squeezed ? bytes : 0;
}

std::vector<CongestionEvent> CongestionLog::Events() const {
  std::vector<std::pair<uint64_t, Second>> congested;
  for (const auto& [key, s] : seconds_) {
    if (Congested(s.transfers, s.bytes, s.squeezed_bytes)) congested.emplace_back(key, s);
  }
  // By link, then second: the key's order.
  std::sort(congested.begin(), congested.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CongestionEvent> out;
  size_t i = 0;
  while (i < congested.size()) {
    const uint64_t link = congested[i].first >> kSecondBits;
    // Runs of congested seconds; one second that is not congested between two of them joins them.
    int64_t first = 0, last = 0;
    uint64_t bytes = 0, squeezed = 0;
    bool open = false;
    auto close = [&] {
      if (open && last - first + 1 >= kMinSeconds) {
        out.push_back(CongestionEvent{int(link >> 20), int((link >> 1) & ((1 << 19) - 1)),
                                      (link & 1) != 0, first * kSecondNs, (last + 1) * kSecondNs,
                                      double(squeezed) / double(bytes)});
      }
      open = false;
    };
    for (; i < congested.size() && congested[i].first >> kSecondBits == link; ++i) {
      const int64_t second = int64_t(congested[i].first & ((uint64_t(1) << kSecondBits) - 1)) -
                             (int64_t(1) << (kSecondBits - 1)) + *first_second_;
      const Second& s = congested[i].second;
      if (open && second > last + 2) close();
      if (!open) {
        open = true;
        first = second;
        bytes = squeezed = 0;
      }
      last = second;
      bytes += s.bytes;
      squeezed += s.squeezed_bytes;
    }
    close();
  }
  return out;
}

}  // namespace prism::sim
