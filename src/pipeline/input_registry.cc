#include "pipeline/input_registry.h"

#include <cstdio>
#include <memory>
#include <span>

#include <fmt/format.h>

#include "io/file_reader.h"
#include "io/flow_csv.h"
#include "io/ipfix_file.h"

namespace prism::pipeline {
namespace {

constexpr const char* kExpected =
    "expected an IPFIX file (message header version 10), a pcap or pcapng capture, or a flow CSV "
    "whose header names src,dst,start_ns,end_ns,bytes";

// A read-only stdio stream over an io::FileReader (fopencookie), so libpcap reads a
// zstd-compressed capture as it decompresses, without holding the whole capture in memory.
struct CookieState {
  std::unique_ptr<io::FileReader> reader;
  std::string error;  // the first read error, reported after libpcap gives up
};

ssize_t CookieRead(void* cookie, char* buf, size_t size) {
  auto* state = static_cast<CookieState*>(cookie);
  auto n = state->reader->Read(std::as_writable_bytes(std::span<char>(buf, size)));
  if (!n) {
    if (state->error.empty()) state->error = n.error().message;
    return -1;
  }
  return static_cast<ssize_t>(*n);
}

int CookieClose(void*) { return 0; }  // the state outlives the stream (its error is read after)

StatusOr<uint64_t> ReadCapture(const std::string& path, const ReadOptions& options,
                               FlowSink* sink, PointTable* points, Stats* stats) {
  PRISM_ASSIGN_OR_RETURN(auto reader, io::FileReader::Open(path));
  std::byte probe[1];
  PRISM_RETURN_IF_ERROR(reader->Read(probe));  // FileReader knows only now whether it is zstd
  if (!reader->compressed()) {
    reader.reset();
    return ingest::ReadPcapFile(path, options.capture, sink, points, stats);
  }
  PRISM_ASSIGN_OR_RETURN(reader, io::FileReader::Open(path));  // from the first byte again
  CookieState state{std::move(reader), {}};
  cookie_io_functions_t io{CookieRead, nullptr, nullptr, CookieClose};
  std::FILE* stream = fopencookie(&state, "rb", io);
  if (stream == nullptr) {
    return MakeError(ErrorCode::kInternal, "{}: cannot open a decompressing stream", path);
  }
  // ReadPcapStream closes the stream. A decompression error reaches libpcap as a read error; its
  // own message is the one worth showing.
  auto n = ingest::ReadPcapStream(stream, path, options.capture, sink, points, stats);
  if (!state.error.empty()) return MakeError(ErrorCode::kDataLoss, "{}", state.error);
  return n;
}

InputRegistry MakeDefault() {
  InputRegistry r;
  r.Register(io::InputKind::kFlowCsv, [](const std::string& path, const ReadOptions&,
                                         FlowSink* sink, PointTable* points, Stats* stats) {
    return io::ReadFlowCsv(path, sink, points, stats);
  });
  r.Register(io::InputKind::kIpfix, [](const std::string& path, const ReadOptions&,
                                       FlowSink* sink, PointTable* points, Stats* stats) {
    return io::ReadIpfixFile(path, sink, points, stats);
  });
  r.Register(io::InputKind::kPcap, ReadCapture);
  r.Register(io::InputKind::kPcapng, ReadCapture);
  return r;
}

}  // namespace

const InputRegistry& InputRegistry::Default() {
  static const InputRegistry registry = MakeDefault();
  return registry;
}

void InputRegistry::Register(io::InputKind kind, InputReader reader) {
  readers_[kind] = std::move(reader);
}

Error NotFlowRecords(const std::string& path, io::InputKind kind, const std::string& head) {
  using io::InputKind;
  switch (kind) {
    case InputKind::kPortCountersCsv:
    case InputKind::kPortTopologyCsv:
      return {ErrorCode::kInvalidArgument,
              fmt::format("{}: a port counters / port topology CSV cannot be mixed with flow "
                          "inputs; give counter files alone (with --topology PORTS.csv)",
                          path)};
    case InputKind::kTopologyCsv:
      return {ErrorCode::kInvalidArgument,
              fmt::format("{}: this is a topology CSV (header names ip and host), not flow "
                          "records; pass it with --topology",
                          path)};
    case InputKind::kNetflowV5:
    case InputKind::kNetflowV9:
      return {ErrorCode::kInvalidArgument,
              fmt::format("{}: looks like a raw {} export packet; NetFlow has no file format: give "
                          "a pcap of the export packets instead (or an IPFIX file); {}",
                          path, io::InputKindName(kind), kExpected)};
    case InputKind::kEmpty:
      return {ErrorCode::kDataLoss, fmt::format("{}: no data ({}); {}", path, head, kExpected)};
    default:
      break;
  }
  return {ErrorCode::kDataLoss,
          fmt::format("{}: unknown input format: {}; got {}", path, kExpected, head)};
}

StatusOr<ReadResult> InputRegistry::Read(const std::string& path, const ReadOptions& options,
                                         FlowSink* sink, PointTable* points, Stats* stats,
                                         io::InputKind* kind_out) const {
  std::string head;
  PRISM_ASSIGN_OR_RETURN(io::InputKind kind, io::SniffInputKind(path, &head));
  if (kind_out != nullptr) *kind_out = kind;
  auto it = readers_.find(kind);
  if (it == readers_.end()) return std::unexpected(NotFlowRecords(path, kind, head));
  PRISM_ASSIGN_OR_RETURN(uint64_t n, it->second(path, options, sink, points, stats));
  return ReadResult{kind, n};
}

}  // namespace prism::pipeline
