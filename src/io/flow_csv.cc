#include "io/flow_csv.h"

#include <array>
#include <iterator>
#include <limits>
#include <vector>

#include "io/csv_util.h"
#include "io/file_reader.h"

namespace prism::io {
namespace {

using internal::ParseInt64;
using internal::ParseUnsigned;
using internal::Quote;

enum Col : int {
  kSrc,
  kDst,
  kStartNs,
  kEndNs,
  kBytes,
  kPackets,
  kSrcPort,
  kDstPort,
  kProto,
  kQp,
  kSamplingRate,
  kSwitch,
  kNumCols
};
constexpr std::array<std::string_view, kNumCols> kColNames = {
    "src",      "dst",      "start_ns", "end_ns", "bytes",         "packets",
    "src_port", "dst_port", "proto",    "qp",     "sampling_rate", "switch"};
constexpr int kNumRequired = kBytes + 1;  // kSrc..kBytes

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    if (x != b[i]) return false;
  }
  return true;
}

// Line-at-a-time parser behind both entry points.
class FlowCsvParser {
 public:
  FlowCsvParser(const std::string& name, FlowSink* sink, PointTable* points, Stats* stats)
      : name_(name), sink_(sink), points_(points), stats_(stats), log_(name) {
    col_.fill(-1);
  }

  // Returns false to stop (fatal header problem, kept in error_).
  bool OnLine(std::string_view line, uint64_t line_no) {
    if (!have_header_) return OnHeader(line, line_no);
    if (internal::TrimField(line).empty()) return true;  // blank lines carry nothing
    OnRow(line, line_no);
    return true;
  }

  StatusOr<uint64_t> Finish() {
    log_.Finish();
    if (!error_.message.empty()) return std::unexpected(error_);
    if (!have_header_) {
      return MakeError(ErrorCode::kDataLoss, "{}: empty file, expected a header line with {}",
                       name_, kFlowCsvHeader);
    }
    if (delivered_ == 0) {
      return MakeError(ErrorCode::kDataLoss, "{}: no usable flow record ({} rows skipped)", name_,
                       skipped_);
    }
    return delivered_;
  }

 private:
  bool OnHeader(std::string_view line, uint64_t line_no) {
    if (line_no == 1 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);  // UTF-8 BOM
    if (internal::TrimField(line).empty()) return true;  // leading blank lines
    internal::SplitCsv(line, &fields_);
    for (size_t i = 0; i < fields_.size(); ++i) {
      for (int c = 0; c < kNumCols; ++c) {
        if (col_[c] < 0 && EqualsIgnoreCase(fields_[i], kColNames[c]))
          col_[c] = static_cast<int>(i);
      }
    }
    for (int c = 0; c < kNumRequired; ++c) {
      if (col_[c] < 0) {
        error_ = Error{ErrorCode::kDataLoss,
                       fmt::format("{}:{}: header lacks required column '{}' (expected columns "
                                   "src,dst,start_ns,end_ns,bytes; got '{}')",
                                   name_, line_no, kColNames[c], line)};
        return false;
      }
    }
    num_fields_ = fields_.size();
    have_header_ = true;
    return true;
  }

  void Bad(Stat stat) {
    ++skipped_;
    if (stats_ != nullptr) stats_->Add(stat);
  }

  template <typename T>
  bool Unsigned(int c, T* out, uint64_t line_no) {
    if (col_[c] < 0) return true;
    std::string_view f = fields_[col_[c]];
    if (f.empty()) return true;  // optional and empty: keep the default
    if (ParseUnsigned(f, out)) return true;
    Bad(Stat::csv_bad_row);
    if (log_.Want()) {
      fmt::print(stderr, "{}:{}: expected an unsigned integer <= {} in column {}, got {}\n", name_,
                 line_no, uint64_t{std::numeric_limits<T>::max()}, kColNames[c], Quote(f));
    }
    return false;
  }

  void OnRow(std::string_view line, uint64_t line_no) {
    internal::SplitCsv(line, &fields_);
    if (fields_.size() != num_fields_) {
      Bad(Stat::csv_bad_row);
      if (log_.Want()) {
        fmt::print(stderr, "{}:{}: expected {} fields as in the header, got {}\n", name_, line_no,
                   num_fields_, fields_.size());
      }
      return;
    }
    FlowRecord r;
    for (int c : {kSrc, kDst}) {
      std::string_view f = fields_[col_[c]];
      auto ip = internal::ParseIp(f);
      if (!ip) {
        Bad(Stat::csv_bad_row);
        if (log_.Want()) {
          fmt::print(stderr, "{}:{}: expected an IPv4 or IPv6 address in column {}, got {}\n",
                     name_, line_no, kColNames[c], Quote(f));
        }
        return;
      }
      (c == kSrc ? r.src : r.dst) = *ip;
    }
    for (int c : {kStartNs, kEndNs}) {
      std::string_view f = fields_[col_[c]];
      if (!ParseInt64(f, c == kStartNs ? &r.start_ns : &r.end_ns)) {
        Bad(Stat::csv_bad_row);
        if (log_.Want()) {
          fmt::print(stderr, "{}:{}: expected an integer (Unix epoch ns) in column {}, got {}\n",
                     name_, line_no, kColNames[c], Quote(f));
        }
        return;
      }
    }
    if (std::string_view f = fields_[col_[kBytes]]; !ParseUnsigned(f, &r.bytes)) {
      Bad(Stat::csv_bad_row);
      if (log_.Want()) {
        fmt::print(stderr, "{}:{}: expected an unsigned integer in column bytes, got {}\n", name_,
                   line_no, Quote(f));
      }
      return;
    }
    if (!Unsigned(kPackets, &r.packets, line_no) || !Unsigned(kSrcPort, &r.src_port, line_no) ||
        !Unsigned(kDstPort, &r.dst_port, line_no) || !Unsigned(kProto, &r.proto, line_no) ||
        !Unsigned(kQp, &r.qp, line_no) || !Unsigned(kSamplingRate, &r.sampling_rate, line_no)) {
      return;
    }
    if (r.sampling_rate == 0) {
      Bad(Stat::csv_bad_row);
      if (log_.Want()) {
        fmt::print(stderr, "{}:{}: expected sampling_rate >= 1 (1 = unsampled), got '0'\n", name_,
                   line_no);
      }
      return;
    }
    if (r.end_ns < r.start_ns) {
      Bad(Stat::csv_bad_time);
      if (log_.Want()) {
        fmt::print(stderr, "{}:{}: expected end_ns >= start_ns, got end_ns {} < start_ns {}\n",
                   name_, line_no, r.end_ns, r.start_ns);
      }
      return;
    }
    if (col_[kSwitch] >= 0) r.point = points_cache_.Intern(fields_[col_[kSwitch]]);
    ++delivered_;
    if (stats_ != nullptr) stats_->Add(Stat::records_read);
    sink_->OnRecord(r);
  }

  const std::string& name_;
  FlowSink* sink_;
  PointTable* points_;
  Stats* stats_;
  internal::ProblemLog log_;
  internal::PointCache points_cache_{points_};
  std::array<int, kNumCols> col_;
  std::vector<std::string_view> fields_;
  size_t num_fields_ = 0;
  bool have_header_ = false;
  Error error_;
  uint64_t delivered_ = 0;
  uint64_t skipped_ = 0;
};

}  // namespace

StatusOr<uint64_t> ReadFlowCsv(const std::string& path, FlowSink* sink, PointTable* points,
                               Stats* stats) {
  PRISM_ASSIGN_OR_RETURN(auto reader, FileReader::Open(path));
  FlowCsvParser parser(path, sink, points, stats);
  PRISM_RETURN_IF_ERROR(internal::ForEachLineInFile(
      reader.get(), [&](std::string_view line, uint64_t no) { return parser.OnLine(line, no); }));
  return parser.Finish();
}

StatusOr<uint64_t> ReadFlowCsvBuffer(std::string_view data, const std::string& name, FlowSink* sink,
                                     PointTable* points, Stats* stats) {
  FlowCsvParser parser(name, sink, points, stats);
  internal::ForEachLine(
      data, 1, [&](std::string_view line, uint64_t no) { return parser.OnLine(line, no); });
  return parser.Finish();
}

// ---------------------------------------------------------------------------------------------

FlowCsvWriter::FlowCsvWriter(std::ostream* out, const PointTable* points)
    : out_(out), points_(points) {
  fmt::format_to(std::back_inserter(buf_), "{}\n", kFlowCsvHeader);
}

FlowCsvWriter::~FlowCsvWriter() { Flush(); }

void FlowCsvWriter::OnRecord(const FlowRecord& r) {
  char ip[2][64];
  size_t src_len = internal::FormatIp(r.src, ip[0]);
  size_t dst_len = internal::FormatIp(r.dst, ip[1]);
  std::string_view point;
  if (r.point != kNoPoint && points_ != nullptr && r.point < points_->size()) {
    point = points_->Name(r.point);
  }
  fmt::format_to(std::back_inserter(buf_), "{},{},{},{},{},{},{},{},{},{},{},{}\n",
                 std::string_view(ip[0], src_len), std::string_view(ip[1], dst_len), r.start_ns,
                 r.end_ns, r.bytes, r.packets, r.src_port, r.dst_port, r.proto, r.qp,
                 r.sampling_rate, point);
  if (buf_.size() >= (1 << 20)) Flush();
}

void FlowCsvWriter::Flush() {
  if (buf_.size() == 0) return;
  out_->write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

}  // namespace prism::io
