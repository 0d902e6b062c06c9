#include "io/csv_util.h"

#include <arpa/inet.h>

#include <cstring>

namespace prism::io::internal {

std::string_view TrimField(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

void SplitCsv(std::string_view line, std::vector<std::string_view>* out) {
  out->clear();
  size_t pos = 0;
  for (;;) {
    size_t comma = line.find(',', pos);
    if (comma == std::string_view::npos) {
      out->push_back(TrimField(line.substr(pos)));
      return;
    }
    out->push_back(TrimField(line.substr(pos, comma - pos)));
    pos = comma + 1;
  }
}

std::optional<IpAddr> ParseIp(std::string_view s) {
  if (s.find(':') != std::string_view::npos) return IpAddr::Parse(s);
  uint32_t v = 0;
  const char* p = s.data();
  const char* end = s.data() + s.size();
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
    // 1-3 digits, no sign; inet_pton semantics (leading zeros accepted as decimal).
    const char* start = p;
    unsigned octet = 0;
    while (p != end && *p >= '0' && *p <= '9' && p - start < 3) octet = octet * 10 + (*p++ - '0');
    if (p == start || octet > 255) return std::nullopt;
    v = (v << 8) | octet;
  }
  if (p != end) return std::nullopt;
  return IpAddr::FromV4(v);
}

size_t FormatIp(const IpAddr& a, char* buf) {
  if (!a.is_v4()) {
    if (inet_ntop(AF_INET6, a.bytes().data(), buf, INET6_ADDRSTRLEN) == nullptr) return 0;
    return std::strlen(buf);
  }
  uint32_t v = a.v4();
  char* p = buf;
  for (int i = 3; i >= 0; --i) {
    unsigned o = (v >> (8 * i)) & 0xff;
    if (o >= 100) *p++ = static_cast<char>('0' + o / 100);
    if (o >= 10) *p++ = static_cast<char>('0' + o / 10 % 10);
    *p++ = static_cast<char>('0' + o % 10);
    if (i > 0) *p++ = '.';
  }
  return static_cast<size_t>(p - buf);
}

std::string Quote(std::string_view s) {
  constexpr size_t kMax = 40;
  if (s.size() <= kMax) return fmt::format("'{}'", s);
  return fmt::format("'{}...'", s.substr(0, kMax));
}

PointId PointCache::Intern(std::string_view name) {
  if (name.empty() || points_ == nullptr) return kNoPoint;
  if (last_id_ != kNoPoint && name == last_name_) return last_id_;
  auto it = ids_.find(name);
  PointId id;
  if (it != ids_.end()) {
    id = it->second;
  } else {
    id = points_->Intern(name);
    ids_.emplace(std::string(name), id);
  }
  last_name_.assign(name);  // reuses capacity
  last_id_ = id;
  return id;
}

}  // namespace prism::io::internal
