// File: io/input_kind.h
// Which reader an input file needs, decided from its first bytes rather than its name, so
// `llmprism analyze a b c` takes any mix of flow CSV and IPFIX files (zstd-compressed or not:
// SniffInputKind looks at the decompressed bytes). Formats we recognise but cannot read yet
// (NetFlow v5/v9, pcap, pcapng) and topology CSVs given as flow input get their own kinds so the
// CLI can say exactly what is wrong.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/status.h"

namespace prism::io {

enum class InputKind {
  kUnknown,
  kEmpty,
  kFlowCsv,      // text whose first non-blank line names columns including src and dst
  kTopologyCsv,  // text whose header names ip and host (but not src/dst)
  kPortCountersCsv,  // text whose header names switch, port and in_bytes or out_bytes (counters mode)
  kPortTopologyCsv,  // text whose header names switch, port and server
  kIpfix,        // IPFIX message header: version 0x000a at offset 0
  kNetflowV5,
  kNetflowV9,
  kPcap,
  kPcapng,
};

// "csv", "topology-csv", "ipfix", "netflow-v9", "pcap", ... ; "unknown", "empty".
const char* InputKindName(InputKind kind);

// How many leading bytes GuessInputKind wants (it copes with fewer).
inline constexpr size_t kInputSniffBytes = 64 * 1024;

InputKind GuessInputKind(std::span<const std::byte> head);

// A short description of what `head` starts with, for "got ..." in error messages: the first line
// quoted when it is text, else the first bytes in hex.
std::string DescribeHead(std::span<const std::byte> head);

// Opens `path` (through FileReader, so zstd is undone), reads up to kInputSniffBytes and guesses.
// `head_description`, if not null, receives DescribeHead() of those bytes.
// Errors: kNotFound (cannot open), kDataLoss (read error).
StatusOr<InputKind> SniffInputKind(const std::string& path, std::string* head_description = nullptr);

}  // namespace prism::io
