#include "io/topology_csv.h"

#include <array>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "io/csv_util.h"
#include "io/file_reader.h"

namespace prism::io {
namespace {

using internal::Quote;

enum Col : int { kIp, kHost, kGpu, kLeaf, kKind, kNumCols };
constexpr std::array<std::string_view, kNumCols> kColNames = {"ip", "host", "gpu", "leaf", "kind"};
constexpr int kNumRequired = kLeaf + 1;

std::string_view KindName(EndpointKind k) {
  switch (k) {
    case EndpointKind::kGpu:
      return "gpu";
    case EndpointKind::kStorage:
      return "storage";
    case EndpointKind::kOther:
      return "other";
  }
  return "other";
}

// The header's columns into `col` (-1: absent); the first required column missing, if any.
std::optional<std::string_view> FindColumns(const std::vector<std::string_view>& fields,
                                            std::array<int, kNumCols>* col) {
  for (size_t i = 0; i < fields.size(); ++i) {
    for (int c = 0; c < kNumCols; ++c) {
      if ((*col)[c] < 0 && fields[i] == kColNames[c]) (*col)[c] = static_cast<int>(i);
    }
  }
  for (int c = 0; c < kNumRequired; ++c) {
    if ((*col)[c] < 0) return kColNames[c];
  }
  return std::nullopt;
}

// One data row (as many fields as the header); the problem, for the log line, when it is bad.
std::expected<EndpointInfo, std::string> ParseRow(const std::vector<std::string_view>& fields,
                                                  const std::array<int, kNumCols>& col) {
  EndpointInfo info;
  std::string_view ip_text = fields[col[kIp]];
  auto ip = internal::ParseIp(ip_text);
  if (!ip) {
    return std::unexpected(
        fmt::format("expected an IPv4 or IPv6 address in column ip, got {}", Quote(ip_text)));
  }
  info.ip = *ip;
  info.host = std::string(fields[col[kHost]]);
  if (info.host.empty()) {
    return std::unexpected(std::string("expected a host name in column host, got ''"));
  }
  std::string_view gpu = fields[col[kGpu]];
  if (!gpu.empty()) {
    int64_t g = 0;
    if (!internal::ParseInt64(gpu, &g) || g < -1 || g > 1'000'000) {
      return std::unexpected(fmt::format(
          "expected a GPU index (>= 0, or -1/empty) in column gpu, got {}", Quote(gpu)));
    }
    info.gpu = static_cast<int>(g);
  }
  info.leaf = std::string(fields[col[kLeaf]]);
  if (col[kKind] >= 0) {
    std::string_view kind = fields[col[kKind]];
    if (kind.empty() || kind == "gpu") {
      info.kind = EndpointKind::kGpu;
    } else if (kind == "storage") {
      info.kind = EndpointKind::kStorage;
    } else if (kind == "other") {
      info.kind = EndpointKind::kOther;
    } else {
      return std::unexpected(
          fmt::format("expected kind gpu, storage or other, got {}", Quote(kind)));
    }
  }
  return info;
}

}  // namespace

StatusOr<Topology> ReadTopologyCsvBuffer(std::string_view data, const std::string& name,
                                         Stats* stats) {
  Topology topo;
  internal::ProblemLog log(name);
  std::array<int, kNumCols> col;
  col.fill(-1);
  std::vector<std::string_view> fields;
  size_t num_fields = 0;
  bool have_header = false;
  uint64_t skipped = 0;
  Error error;
  auto bad = [&](Stat s) {
    ++skipped;
    if (stats != nullptr) stats->Add(s);
    return log.Want();
  };

  internal::ForEachLine(data, 1, [&](std::string_view line, uint64_t line_no) {
    if (line_no == 1 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
    if (internal::TrimField(line).empty()) return true;
    internal::SplitCsv(line, &fields);
    if (!have_header) {
      if (auto missing = FindColumns(fields, &col)) {
        error = Error{ErrorCode::kDataLoss,
                      fmt::format("{}:{}: header lacks required column '{}' (expected "
                                  "ip,host,gpu,leaf[,kind]; got '{}')",
                                  name, line_no, *missing, line)};
        return false;
      }
      num_fields = fields.size();
      have_header = true;
      return true;
    }
    if (fields.size() != num_fields) {
      if (bad(Stat::topology_bad_row)) {
        fmt::print(stderr, "{}:{}: expected {} fields as in the header, got {}\n", name, line_no,
                   num_fields, fields.size());
      }
      return true;
    }
    auto row = ParseRow(fields, col);
    if (!row) {
      if (bad(Stat::topology_bad_row)) {
        fmt::print(stderr, "{}:{}: {}\n", name, line_no, row.error());
      }
      return true;
    }
    EndpointInfo& info = *row;
    if (topo.Contains(info.ip)) {
      if (bad(Stat::topology_duplicate_ip)) {
        fmt::print(stderr, "{}:{}: expected each ip once, got {} again\n", name, line_no,
                   info.ip.ToString());
      }
      return true;
    }
    topo.Add(std::move(info));
    return true;
  });
  log.Finish();
  if (!error.message.empty()) return std::unexpected(error);
  if (!have_header) {
    return MakeError(ErrorCode::kDataLoss,
                     "{}: empty file, expected a header line ip,host,gpu,leaf", name);
  }
  if (topo.empty()) {
    return MakeError(ErrorCode::kDataLoss, "{}: no usable topology row ({} rows skipped)", name,
                     skipped);
  }
  return topo;
}

StatusOr<Topology> ReadTopologyCsv(const std::string& path, Stats* stats) {
  PRISM_ASSIGN_OR_RETURN(std::string data, ReadWholeFile(path));
  return ReadTopologyCsvBuffer(data, path, stats);
}

Status WriteTopologyCsv(const Topology& topo, std::ostream* out) {
  fmt::memory_buffer buf;
  fmt::format_to(std::back_inserter(buf), "ip,host,gpu,leaf,kind\n");
  for (const EndpointInfo& e : topo.entries()) {
    if (e.gpu >= 0) {
      fmt::format_to(std::back_inserter(buf), "{},{},{},{},{}\n", e.ip.ToString(), e.host, e.gpu,
                     e.leaf, KindName(e.kind));
    } else {
      fmt::format_to(std::back_inserter(buf), "{},{},,{},{}\n", e.ip.ToString(), e.host, e.leaf,
                     KindName(e.kind));
    }
  }
  out->write(buf.data(), static_cast<std::streamsize>(buf.size()));
  if (!out->good()) return MakeError(ErrorCode::kDataLoss, "topology CSV: write failed");
  return OkStatus();
}

}  // namespace prism::io
