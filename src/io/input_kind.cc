#include "io/input_kind.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "io/csv_util.h"
#include "io/file_reader.h"

namespace prism::io {
namespace {

uint32_t Be32(std::span<const std::byte> b) {
  return (std::to_integer<uint32_t>(b[0]) << 24) | (std::to_integer<uint32_t>(b[1]) << 16) |
         (std::to_integer<uint32_t>(b[2]) << 8) | std::to_integer<uint32_t>(b[3]);
}
uint16_t Be16(std::span<const std::byte> b) {
  return static_cast<uint16_t>((std::to_integer<uint16_t>(b[0]) << 8) | std::to_integer<uint16_t>(b[1]));
}

// Text as our CSVs are: no NUL and no control characters other than tab, CR, LF (bytes >= 0x80
// pass, for UTF-8 names).
bool LooksLikeText(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c < 0x20 && c != '\t' && c != '\r' && c != '\n';
  });
}

// The first non-blank line, without a UTF-8 BOM and line ending.
std::string_view FirstLine(std::string_view s) {
  if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);
  while (!s.empty()) {
    size_t nl = s.find('\n');
    std::string_view line = s.substr(0, nl);
    if (!internal::TrimField(line).empty()) return internal::TrimField(line);
    if (nl == std::string_view::npos) break;
    s.remove_prefix(nl + 1);
  }
  return {};
}

std::string_view AsText(std::span<const std::byte> head) {
  return {reinterpret_cast<const char*>(head.data()), head.size()};
}

}  // namespace

const char* InputKindName(InputKind kind) {
  switch (kind) {
    case InputKind::kUnknown: return "unknown";
    case InputKind::kEmpty: return "empty";
    case InputKind::kFlowCsv: return "csv";
    case InputKind::kTopologyCsv: return "topology-csv";
    case InputKind::kPortCountersCsv: return "counters-csv";
    case InputKind::kPortTopologyCsv: return "port-topology-csv";
    case InputKind::kIpfix: return "ipfix";
    case InputKind::kNetflowV5: return "netflow-v5";
    case InputKind::kNetflowV9: return "netflow-v9";
    case InputKind::kPcap: return "pcap";
    case InputKind::kPcapng: return "pcapng";
  }
  return "unknown";
}

InputKind GuessInputKind(std::span<const std::byte> head) {
  if (head.empty()) return InputKind::kEmpty;
  if (head.size() >= 4) {
    uint32_t magic = Be32(head);
    if (magic == 0xA1B2C3D4 || magic == 0xD4C3B2A1 || magic == 0xA1B23C4D || magic == 0x4D3CB2A1) {
      return InputKind::kPcap;
    }
    if (magic == 0x0A0D0D0A) return InputKind::kPcapng;
  }
  if (head.size() >= 2) {
    switch (Be16(head)) {
      case 10: return InputKind::kIpfix;  // RFC 7011 3.1: version 0x000a
      case 9: return InputKind::kNetflowV9;
      case 5: return InputKind::kNetflowV5;
      default: break;
    }
  }
  std::string_view text = AsText(head);
  if (!LooksLikeText(text)) return InputKind::kUnknown;
  std::vector<std::string_view> fields;
  internal::SplitCsv(FirstLine(text), &fields);
  auto has = [&](std::string_view name) {
    return std::any_of(fields.begin(), fields.end(), [&](std::string_view f) {
      return f.size() == name.size() &&
             std::equal(f.begin(), f.end(), name.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) == b;
             });
    });
  };
  if (has("src") && has("dst")) return InputKind::kFlowCsv;
  if (has("switch") && has("port") && (has("in_bytes") || has("out_bytes")))
    return InputKind::kPortCountersCsv;
  if (has("switch") && has("port") && has("server")) return InputKind::kPortTopologyCsv;
  if (has("ip") && has("host")) return InputKind::kTopologyCsv;
  if (FirstLine(text).empty()) return InputKind::kEmpty;  // only blank lines
  return InputKind::kUnknown;
}

std::string DescribeHead(std::span<const std::byte> head) {
  if (head.empty()) return "an empty file";
  std::string_view text = AsText(head);
  if (LooksLikeText(text)) {
    std::string_view line = FirstLine(text);
    if (line.empty()) return "only blank lines";
    return fmt::format("first line {}", internal::Quote(line));
  }
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(head.size(), 8); ++i) {
    hex += fmt::format("{}{:02x}", i == 0 ? "" : " ", std::to_integer<unsigned>(head[i]));
  }
  return fmt::format("binary data starting {}", hex);
}

StatusOr<InputKind> SniffInputKind(const std::string& path, std::string* head_description) {
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader, FileReader::Open(path));
  std::vector<std::byte> head(kInputSniffBytes);
  size_t filled = 0;
  while (filled < head.size()) {  // Read() may return short counts from a zstd stream
    PRISM_ASSIGN_OR_RETURN(size_t n, reader->Read(std::span(head).subspan(filled)));
    if (n == 0) break;
    filled += n;
  }
  head.resize(filled);
  if (head_description != nullptr) *head_description = DescribeHead(head);
  return GuessInputKind(head);
}

}  // namespace prism::io
