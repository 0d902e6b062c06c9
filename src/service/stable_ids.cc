#include "service/stable_ids.h"

#include <fmt/format.h>

namespace prism::service {

namespace {

constexpr int64_t kFindingIdLow = int64_t{1} << 32;
constexpr int64_t kFindingIdSpan = (int64_t{1} << 53) - kFindingIdLow;

}  // namespace

uint64_t Fnv1a64(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string StableJobId(const std::vector<IpAddr>& gpus, int attempt) {
  std::string text;
  for (const IpAddr& ip : gpus) text += ip.ToString() + ",";
  const std::string id = fmt::format("job-{:012x}", Fnv1a64(text) >> 16);
  return attempt <= 1 ? id : fmt::format("{}-{}", id, attempt);
}

int64_t StableFindingId(std::string_view identity, int64_t first_window_end_ns) {
  const uint64_t h = Fnv1a64(fmt::format("{}@{}", identity, first_window_end_ns));
  return kFindingIdLow + static_cast<int64_t>(h % static_cast<uint64_t>(kFindingIdSpan));
}

int64_t NextFindingId(int64_t id) {
  return kFindingIdLow + (id - kFindingIdLow + 1) % kFindingIdSpan;
}

}  // namespace prism::service
