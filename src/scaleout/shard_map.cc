#include "scaleout/shard_map.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace prism::scaleout {

namespace {
constexpr std::string_view kGpuPrefix = "gpu.";
}  // namespace

std::string ShardSubject(int shard) { return fmt::format("records.shard.{}.jobs", shard); }
std::string ShardSubjects(int shard) { return fmt::format("records.shard.{}.>", shard); }
std::string NoJobSubject() { return "records.shard.0.other"; }

std::string GpuKey(const IpAddr& gpu) {
  std::string key = std::string(kGpuPrefix) + gpu.ToString();
  std::replace(key.begin(), key.end(), ':', '_');
  return key;
}

std::optional<IpAddr> GpuFromKey(const std::string& key) {
  if (!key.starts_with(kGpuPrefix)) return std::nullopt;
  std::string addr = key.substr(kGpuPrefix.size());
  std::replace(addr.begin(), addr.end(), '_', ':');
  return IpAddr::Parse(addr);
}

std::string EncodeShardEntry(const ShardEntry& e) { return fmt::format("{} {}", e.shard, e.job); }

std::optional<ShardEntry> DecodeShardEntry(const std::string& value) {
  const size_t space = value.find(' ');
  if (space == std::string::npos || space + 1 >= value.size()) return std::nullopt;
  ShardEntry e;
  auto [end, ec] = std::from_chars(value.data(), value.data() + space, e.shard);
  if (ec != std::errc() || end != value.data() + space || e.shard < 0) return std::nullopt;
  e.job = value.substr(space + 1);
  return e;
}

}  // namespace prism::scaleout
