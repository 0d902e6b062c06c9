#include "scaleout/shard_lease.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace prism::scaleout {

namespace {

constexpr std::string_view kShardPrefix = "shard.";
constexpr std::string_view kMemberPrefix = "analyser.";

}  // namespace

std::string ShardLeaseKey(int shard) { return fmt::format("{}{}", kShardPrefix, shard); }

std::optional<int> ShardFromLeaseKey(const std::string& key) {
  if (!key.starts_with(kShardPrefix)) return std::nullopt;
  int shard = -1;
  const char* first = key.data() + kShardPrefix.size();
  const char* last = key.data() + key.size();
  auto [end, ec] = std::from_chars(first, last, shard);
  if (ec != std::errc() || end != last || first == last || shard < 0) return std::nullopt;
  return shard;
}

std::string MemberKey(const std::string& analyser) {
  return fmt::format("{}{}", kMemberPrefix, analyser);
}

std::optional<std::string> MemberFromKey(const std::string& key) {
  if (!key.starts_with(kMemberPrefix) || key.size() == kMemberPrefix.size()) return std::nullopt;
  return key.substr(kMemberPrefix.size());
}

std::string LeaseName(const std::string& raw) {
  std::string out = raw;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok) c = '_';
  }
  return out.empty() ? std::string("_") : out;
}

std::string EncodeShardLease(const ShardLease& lease) {
  return fmt::format("{} {}", lease.free() ? std::string("-") : lease.holder,
                     lease.committed_end_ns);
}

std::optional<ShardLease> DecodeShardLease(const std::string& value) {
  const size_t space = value.find(' ');
  if (space == std::string::npos || space == 0) return std::nullopt;
  ShardLease lease;
  const std::string holder = value.substr(0, space);
  if (holder != "-") lease.holder = holder;
  const char* first = value.data() + space + 1;
  const char* last = value.data() + value.size();
  auto [end, ec] = std::from_chars(first, last, lease.committed_end_ns);
  if (ec != std::errc() || end != last || first == last) return std::nullopt;
  return lease;
}

void LeaseClock::Observe(const std::string& key, uint64_t revision, Clock::time_point now) {
  auto [it, inserted] = seen_.try_emplace(key, Seen{revision, now});
  if (!inserted && it->second.revision != revision) it->second = Seen{revision, now};
}

bool LeaseClock::Lapsed(const std::string& key, Clock::time_point now) const {
  return Unchanged(key, now) >= ttl_;
}

std::chrono::milliseconds LeaseClock::Unchanged(const std::string& key,
                                                Clock::time_point now) const {
  auto it = seen_.find(key);
  if (it == seen_.end()) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second.since);
}

int FairShare(int shards, int live_analysers) {
  const int live = std::max(1, live_analysers);
  return (shards + live - 1) / live;
}

std::vector<int> ShardsToTake(const std::vector<ShardState>& shards, const std::set<int>& held,
                              int live_analysers) {
  const int room = FairShare(static_cast<int>(shards.size()), live_analysers) -
                   static_cast<int>(held.size());
  std::vector<int> open, lapsed;
  for (int n = 0; n < static_cast<int>(shards.size()); ++n) {
    if (held.contains(n)) continue;
    const ShardState& s = shards[n];
    if (!s.present || s.lease.free()) {
      open.push_back(n);
    } else if (s.lapsed) {
      lapsed.push_back(n);
    }
  }
  open.insert(open.end(), lapsed.begin(), lapsed.end());
  if (room <= 0) return {};
  if (static_cast<int>(open.size()) > room) open.resize(room);
  return open;
}

}  // namespace prism::scaleout
