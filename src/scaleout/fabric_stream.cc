#include "scaleout/fabric_stream.h"

#include <charconv>

#include <fmt/format.h>

namespace prism::scaleout {
namespace {

// A whole decimal token (no sign, no leading '+', nothing left over).
template <typename T>
std::optional<T> Number(std::string_view s) {
  T v{};
  if (s.empty() || s[0] == '-' || s[0] == '+') return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

StreamSpec FabricStreamSpec(int replicas) {
  StreamSpec spec;
  spec.name = kFabricStream;
  spec.subjects = {kFabricSubjects};
  spec.replicas = replicas;
  return spec;
}

std::string FabricSubject(const FabricKey& k) {
  return fmt::format("fabric.{}.{}.{}.{}", k.window_end_ns, k.shard, k.part, k.parts);
}

std::string FabricMessageId(const FabricKey& k) {
  return fmt::format("{}.{}.{}.{}", k.window_end_ns, k.shard, k.part, k.parts);
}

std::optional<FabricKey> ParseFabricSubject(std::string_view subject) {
  constexpr std::string_view kPrefix = "fabric.";
  if (!subject.starts_with(kPrefix)) return std::nullopt;
  subject.remove_prefix(kPrefix.size());
  std::string_view token[4];
  for (int i = 0; i < 4; ++i) {
    const size_t dot = i < 3 ? subject.find('.') : subject.size();
    if (dot == std::string_view::npos) return std::nullopt;
    token[i] = subject.substr(0, dot);
    subject.remove_prefix(std::min(subject.size(), dot + 1));
  }
  if (token[3].find('.') != std::string_view::npos) return std::nullopt;
  const auto end = Number<int64_t>(token[0]);
  const auto shard = Number<int>(token[1]), part = Number<int>(token[2]),
             parts = Number<int>(token[3]);
  if (!end || !shard || !part || !parts || *parts < 1 || *part >= *parts) return std::nullopt;
  return FabricKey{*end, *shard, *part, *parts};
}

std::optional<int> ShardOfRecordSubject(std::string_view subject) {
  constexpr std::string_view kPrefix = "records.shard.";
  if (!subject.starts_with(kPrefix)) return std::nullopt;
  subject.remove_prefix(kPrefix.size());
  const size_t dot = subject.find('.');
  if (dot == std::string_view::npos || dot + 1 >= subject.size()) return std::nullopt;
  return Number<int>(subject.substr(0, dot));
}

}  // namespace prism::scaleout
