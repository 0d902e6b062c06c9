// File: io/csv_util.h
// Internal helpers shared by the CSV readers (flow_csv, topology_csv) and the IPFIX reader:
// allocation-free line splitting and field parsing, a capped stderr problem log and an interning
// cache for observation-point names. Not part of the io module's public interface.
#pragma once

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/flow_record.h"
#include "core/ip_addr.h"
#include "core/name_table.h"
#include "core/status.h"
#include "io/file_reader.h"

namespace prism::io::internal {

// Strips spaces, tabs and a trailing '\r'.
std::string_view TrimField(std::string_view s);

// Splits `line` at commas into `out` (cleared first; its capacity is reused, so steady-state rows
// allocate nothing). Fields are trimmed. No quoting: our CSVs hold addresses, numbers and names.
void SplitCsv(std::string_view line, std::vector<std::string_view>* out);

// Whole-field unsigned integer parse (decimal); false on empty, sign, junk or overflow.
template <typename T>
bool ParseUnsigned(std::string_view s, T* out) {
  static_assert(std::is_unsigned_v<T>);
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

inline bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty() || s[0] == '+') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// IPv4 dotted quad (fast path, no libc call) or IPv6.
std::optional<IpAddr> ParseIp(std::string_view s);

// Writes the text form of `a` into `buf` (>= 46 bytes); returns the length. No allocation.
size_t FormatIp(const IpAddr& a, char* buf);

// For messages: the field as given, shortened to a readable length.
std::string Quote(std::string_view s);

// Prints the first `cap` problems of one input on stderr and counts the rest, so a file full of
// bad rows does not flood the terminal. Usage: if (log.Want()) fmt::print(stderr, ...);
class ProblemLog {
 public:
  explicit ProblemLog(std::string name, int cap = 5) : name_(std::move(name)), cap_(cap) {}
  ~ProblemLog() { Finish(); }
  bool Want() { return ++count_ <= static_cast<uint64_t>(cap_); }
  uint64_t count() const { return count_; }
  // Says how many problems were not shown (once).
  void Finish() {
    if (!finished_ && count_ > static_cast<uint64_t>(cap_)) {
      fmt::print(stderr, "{}: {} more problems not shown\n", name_, count_ - cap_);
    }
    finished_ = true;
  }

 private:
  std::string name_;
  int cap_;
  uint64_t count_ = 0;
  bool finished_ = false;
};

// Maps observation-point names to PointIds through a PointTable, looking names up without building
// a std::string per record (PointTable::Intern allocates a key on every call).
class PointCache {
 public:
  explicit PointCache(PointTable* points) : points_(points) {}
  PointId Intern(std::string_view name);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  PointTable* points_;
  std::unordered_map<std::string, PointId, Hash, std::equal_to<>> ids_;
  std::string last_name_;
  PointId last_id_ = kNoPoint;
};

// Calls fn(line, line_no) for each line of `data` (1-based numbers, '\n' or "\r\n" endings, the
// last line may lack its newline) until fn returns false.
template <typename Fn>
void ForEachLine(std::string_view data, uint64_t first_line_no, Fn&& fn) {
  uint64_t line_no = first_line_no;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    size_t end = nl == std::string_view::npos ? data.size() : nl;
    std::string_view line = data.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!fn(line, line_no)) return;
    ++line_no;
    pos = end + 1;
  }
}

// Same over a file read in big chunks; only complete lines are handed out, so memory stays at
// one chunk plus the longest line. Returns an error only for I/O problems.
template <typename Fn>
Status ForEachLineInFile(FileReader* reader, Fn&& fn) {
  std::vector<std::byte> buf(4 << 20);
  size_t filled = 0;
  uint64_t line_no = 1;
  bool stop = false;
  for (;;) {
    if (filled == buf.size()) buf.resize(buf.size() * 2);  // one line longer than the buffer
    PRISM_ASSIGN_OR_RETURN(size_t n, reader->Read(std::span(buf).subspan(filled)));
    filled += n;
    std::string_view data(reinterpret_cast<const char*>(buf.data()), filled);
    if (n == 0) {  // end of file: the rest is the last line
      ForEachLine(data, line_no, fn);
      return OkStatus();
    }
    size_t last_nl = data.rfind('\n');
    if (last_nl == std::string_view::npos) continue;
    std::string_view complete = data.substr(0, last_nl + 1);
    uint64_t lines = 0;
    ForEachLine(complete, line_no, [&](std::string_view line, uint64_t no) {
      ++lines;
      if (!fn(line, no)) {
        stop = true;
        return false;
      }
      return true;
    });
    if (stop) return OkStatus();
    line_no += lines;
    size_t rest = filled - (last_nl + 1);
    std::memmove(buf.data(), buf.data() + last_nl + 1, rest);
    filled = rest;
  }
}

}  // namespace prism::io::internal
