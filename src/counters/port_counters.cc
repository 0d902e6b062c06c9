#include "counters/port_counters.h"

#include <algorithm>
#include <numeric>
#include <ostream>

#include <fmt/format.h>

#include "io/csv_util.h"
#include "io/file_reader.h"

namespace prism::counters {
namespace {

using io::internal::ParseInt64;
using io::internal::ParseUnsigned;
using io::internal::ProblemLog;
using io::internal::Quote;
using io::internal::SplitCsv;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

int FindColumn(const std::vector<std::string_view>& fields,
               std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (EqualsIgnoreCase(fields[i], name)) return static_cast<int>(i);
    }
  }
  return -1;
}

// Votes for "this port's values are cumulative counters": +1 cumulative, -1 deltas, 0 no opinion
// (too few or idle polls).
int VoteCumulative(const std::vector<uint64_t>& v) {
  if (v.size() < 8) return 0;
  size_t up = 0, down = 0;
  std::vector<uint64_t> steps;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] >= v[i - 1]) {
      ++up;
      if (v[i] > v[i - 1]) steps.push_back(v[i] - v[i - 1]);
    } else {
      ++down;
    }
  }
  if (steps.empty()) return 0;  // constant: idle, either way
  if (down * 10 > up + down) return -1;  // a few wraps or resets are fine
  std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
  const uint64_t step = steps[steps.size() / 2];
  std::vector<uint64_t> sorted = v;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  // A cumulative counter's level dwarfs its steps after a few polls; a delta series' level is its
  // step size.
  return sorted[sorted.size() / 2] > 8 * step ? 1 : -1;
}

}  // namespace

const char* CounterKindName(CounterKind kind) {
  switch (kind) {
    case CounterKind::kAuto: return "auto";
    case CounterKind::kDelta: return "delta";
    case CounterKind::kCumulative: return "cumulative";
  }
  return "auto";
}

StatusOr<CounterKind> ParseCounterKind(std::string_view name) {
  if (name == "auto") return CounterKind::kAuto;
  if (name == "delta") return CounterKind::kDelta;
  if (name == "cumulative") return CounterKind::kCumulative;
  return MakeError(ErrorCode::kInvalidArgument,
                   "counter kind '{}': expected auto, delta or cumulative", name);
}

void CountersBuilder::Add(std::string_view switch_name, std::string_view port, int64_t ts_ms,
                          uint64_t in_raw, uint64_t out_raw) {
  key_.assign(switch_name);
  key_ += '\t';
  key_ += port;
  auto it = index_.find(std::string_view(key_));
  size_t idx;
  if (it == index_.end()) {
    idx = ports_.size();
    index_.emplace(key_, idx);
    PortSeries s;
    s.switch_name.assign(switch_name);
    s.port.assign(port);
    ports_.push_back(std::move(s));
  } else {
    idx = it->second;
  }
  PortSeries& s = ports_[idx];
  s.ts_ms.push_back(ts_ms);
  s.in_bytes.push_back(in_raw);
  s.out_bytes.push_back(out_raw);
  ++rows_;
}

void CumulativeToDelta(std::vector<uint64_t>* values, Stats* stats) {
  std::vector<uint64_t>& v = *values;
  if (v.empty()) return;
  uint64_t prev = v[0];
  for (size_t i = 1; i < v.size(); ++i) {
    const uint64_t cur = v[i];
    uint64_t delta;
    if (cur >= prev) {
      delta = cur - prev;
    } else {
      constexpr uint64_t k32 = uint64_t{1} << 32;
      const uint64_t wrap32 = prev < k32 ? k32 - prev + cur : UINT64_MAX;
      const uint64_t wrap64 = UINT64_MAX - prev + cur + 1;
      if (prev < k32 && prev >= (k32 / 4) * 3 && cur < k32 / 4 && wrap32 < k32 / 2) {
        delta = wrap32;
        if (stats) stats->Add(Stat::counters_wrap);
      } else if (prev >= (UINT64_MAX / 4) * 3 && wrap64 < (uint64_t{1} << 62)) {
        delta = wrap64;
        if (stats) stats->Add(Stat::counters_wrap);
      } else {
        delta = cur;  // reset: counted from 0 again
        if (stats) stats->Add(Stat::counters_reset);
      }
    }
    v[i] = delta;
    prev = cur;
  }
}

CountersData CountersBuilder::Finish() {
  CountersData out;
  // Time order per port; equal timestamps keep the first poll.
  for (PortSeries& s : ports_) {
    const size_t n = s.ts_ms.size();
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    if (!std::is_sorted(s.ts_ms.begin(), s.ts_ms.end())) {
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return s.ts_ms[a] < s.ts_ms[b]; });
    }
    PortSeries t;
    t.switch_name = std::move(s.switch_name);
    t.port = std::move(s.port);
    t.ts_ms.reserve(n);
    t.in_bytes.reserve(n);
    t.out_bytes.reserve(n);
    for (size_t k : order) {
      if (!t.ts_ms.empty() && s.ts_ms[k] == t.ts_ms.back()) {
        if (stats_) stats_->Add(Stat::counters_out_of_order);
        continue;
      }
      t.ts_ms.push_back(s.ts_ms[k]);
      t.in_bytes.push_back(s.in_bytes[k]);
      t.out_bytes.push_back(s.out_bytes[k]);
    }
    s = std::move(t);
  }
  bool cumulative = kind_ == CounterKind::kCumulative;
  if (kind_ == CounterKind::kAuto) {
    int votes = 0;
    for (const PortSeries& s : ports_) votes += VoteCumulative(s.out_bytes) + VoteCumulative(s.in_bytes);
    cumulative = votes > 0;
  }
  if (cumulative) {
    for (PortSeries& s : ports_) {
      CumulativeToDelta(&s.in_bytes, stats_);
      CumulativeToDelta(&s.out_bytes, stats_);
    }
  }
  std::sort(ports_.begin(), ports_.end(), [](const PortSeries& a, const PortSeries& b) {
    return std::tie(a.switch_name, a.port) < std::tie(b.switch_name, b.port);
  });
  out.first_ms = INT64_MAX;
  out.last_ms = INT64_MIN;
  for (const PortSeries& s : ports_) {
    out.rows += s.ts_ms.size();
    if (!s.ts_ms.empty()) {
      out.first_ms = std::min(out.first_ms, s.ts_ms.front());
      out.last_ms = std::max(out.last_ms, s.ts_ms.back());
    }
  }
  if (out.rows == 0) out.first_ms = out.last_ms = 0;
  if (stats_) stats_->Add(Stat::counters_rows, out.rows);
  out.ports = std::move(ports_);
  ports_.clear();
  index_.clear();
  return out;
}

namespace {

struct CsvColumns {
  int ts = -1, sw = -1, port = -1, in = -1, out = -1;
  size_t count = 0;
};

constexpr const char* kCountersHeader = "ts_ms,switch,port,in_bytes,out_bytes";

// Feeds one line at a time; the first non-blank line is the header.
class CountersCsvParser {
 public:
  CountersCsvParser(const std::string& name, CounterKind kind, Stats* stats)
      : name_(name), builder_(kind, stats), stats_(stats), log_(name) {}

  // False stops reading (bad header).
  bool Line(std::string_view line, uint64_t line_no) {
    if (io::internal::TrimField(line).empty()) return true;
    SplitCsv(line, &fields_);
    if (!have_header_) {
      std::string_view first = line;
      if (first.starts_with("\xEF\xBB\xBF")) {
        first.remove_prefix(3);
        SplitCsv(first, &fields_);
      }
      cols_.ts = FindColumn(fields_, {"ts_ms", "timestamp_ms", "ts", "time_ms"});
      cols_.sw = FindColumn(fields_, {"switch", "device", "instance"});
      cols_.port = FindColumn(fields_, {"port", "interface", "ifname"});
      cols_.in = FindColumn(fields_, {"in_bytes", "in_octets", "rx_bytes"});
      cols_.out = FindColumn(fields_, {"out_bytes", "out_octets", "tx_bytes"});
      cols_.count = fields_.size();
      if (cols_.ts < 0 || cols_.sw < 0 || cols_.port < 0 || (cols_.in < 0 && cols_.out < 0)) {
        header_error_ = fmt::format("{}:{}: expected a counters CSV header naming {}, got {}",
                                    name_, line_no, kCountersHeader, Quote(line));
        return false;
      }
      have_header_ = true;
      return true;
    }
    int64_t ts = 0;
    uint64_t in = 0, out = 0;
    bool ok = fields_.size() == cols_.count && ParseInt64(fields_[cols_.ts], &ts) &&
              !fields_[cols_.sw].empty() && !fields_[cols_.port].empty() &&
              (cols_.in < 0 || ParseUnsigned(fields_[cols_.in], &in)) &&
              (cols_.out < 0 || ParseUnsigned(fields_[cols_.out], &out));
    if (!ok) {
      if (stats_) stats_->Add(Stat::counters_bad_row);
      if (log_.Want()) {
        fmt::print(stderr, "{}:{}: expected {} (integers, {} fields), got {}\n", name_, line_no,
                   kCountersHeader, cols_.count, Quote(line));
      }
      return true;
    }
    builder_.Add(fields_[cols_.sw], fields_[cols_.port], ts, in, out);
    return true;
  }

  StatusOr<CountersData> Finish() {
    log_.Finish();
    if (!header_error_.empty()) return MakeError(ErrorCode::kDataLoss, "{}", header_error_);
    if (!have_header_) {
      return MakeError(ErrorCode::kDataLoss, "{}: empty; expected a counters CSV header naming {}",
                       name_, kCountersHeader);
    }
    CountersData data = builder_.Finish();
    if (data.rows == 0) return MakeError(ErrorCode::kDataLoss, "{}: no usable counter row", name_);
    return data;
  }

 private:
  std::string name_;
  CountersBuilder builder_;
  Stats* stats_;
  ProblemLog log_;
  std::vector<std::string_view> fields_;
  CsvColumns cols_;
  bool have_header_ = false;
  std::string header_error_;
};

}  // namespace

StatusOr<CountersData> ReadCountersCsv(const std::string& path, CounterKind kind, Stats* stats) {
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<io::FileReader> reader, io::FileReader::Open(path));
  CountersCsvParser parser(path, kind, stats);
  PRISM_RETURN_IF_ERROR(io::internal::ForEachLineInFile(
      reader.get(), [&](std::string_view line, uint64_t no) { return parser.Line(line, no); }));
  return parser.Finish();
}

StatusOr<CountersData> ReadCountersCsvBuffer(std::string_view data, const std::string& name,
                                             CounterKind kind, Stats* stats) {
  CountersCsvParser parser(name, kind, stats);
  io::internal::ForEachLine(data, 1,
                            [&](std::string_view line, uint64_t no) { return parser.Line(line, no); });
  return parser.Finish();
}

Status WriteCountersCsv(const CountersData& data, std::ostream* out) {
  *out << "ts_ms,switch,port,in_pkts,in_bytes,out_pkts,out_bytes\n";
  fmt::memory_buffer buf;
  for (const PortSeries& s : data.ports) {
    for (size_t i = 0; i < s.ts_ms.size(); ++i) {
      buf.clear();
      fmt::format_to(std::back_inserter(buf), "{},{},{},0,{},0,{}\n", s.ts_ms[i], s.switch_name,
                     s.port, s.in_bytes[i], s.out_bytes[i]);
      out->write(buf.data(), static_cast<std::streamsize>(buf.size()));
    }
  }
  out->flush();
  if (!*out) return MakeError(ErrorCode::kDataLoss, "cannot write the counters CSV");
  return OkStatus();
}

namespace {

StatusOr<PortTopology> ParsePortTopology(std::string_view data, const std::string& name,
                                         Stats* stats) {
  PortTopology topo;
  std::vector<std::string_view> f;
  int sw = -1, port = -1, server = -1, ip = -1, nic = -1;
  size_t count = 0;
  bool header = false;
  std::string error;
  ProblemLog log(name);
  io::internal::ForEachLine(data, 1, [&](std::string_view line, uint64_t no) {
    if (io::internal::TrimField(line).empty()) return true;
    if (!header) {
      if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
      SplitCsv(line, &f);
      sw = FindColumn(f, {"switch"});
      port = FindColumn(f, {"port"});
      server = FindColumn(f, {"server", "host"});
      ip = FindColumn(f, {"nic_ip", "ip"});
      nic = FindColumn(f, {"nic"});
      count = f.size();
      if (sw < 0 || port < 0 || server < 0) {
        error = fmt::format("{}:{}: expected a port topology header naming switch,port,server"
                            "[,nic_ip,nic], got {}",
                            name, no, Quote(line));
        return false;
      }
      header = true;
      return true;
    }
    SplitCsv(line, &f);
    if (f.size() != count || f[sw].empty() || f[port].empty() || f[server].empty()) {
      if (stats) stats->Add(Stat::topology_bad_row);
      if (log.Want()) {
        fmt::print(stderr, "{}:{}: expected switch,port,server with {} fields, got {}\n", name, no,
                   count, Quote(line));
      }
      return true;
    }
    PortNic n{std::string(f[server]), ip >= 0 ? std::string(f[ip]) : "",
              nic >= 0 ? std::string(f[nic]) : ""};
    auto [it, inserted] = topo.emplace(std::pair(std::string(f[sw]), std::string(f[port])), n);
    if (!inserted && stats) stats->Add(Stat::topology_duplicate_ip);
    return true;
  });
  if (!error.empty()) return MakeError(ErrorCode::kDataLoss, "{}", error);
  if (topo.empty()) return MakeError(ErrorCode::kDataLoss, "{}: no usable port topology row", name);
  return topo;
}

}  // namespace

StatusOr<PortTopology> ReadPortTopologyCsv(const std::string& path, Stats* stats) {
  PRISM_ASSIGN_OR_RETURN(std::string data, io::ReadWholeFile(path));
  return ParsePortTopology(data, path, stats);
}

StatusOr<PortTopology> ReadPortTopologyCsvBuffer(std::string_view data, const std::string& name,
                                                 Stats* stats) {
  return ParsePortTopology(data, name, stats);
}

Status WritePortTopologyCsv(const PortTopology& topo, std::ostream* out) {
  *out << "switch,port,server,nic_ip,nic\n";
  for (const auto& [key, n] : topo) {
    *out << key.first << ',' << key.second << ',' << n.server << ',' << n.nic_ip << ',' << n.nic
         << '\n';
  }
  out->flush();
  if (!*out) return MakeError(ErrorCode::kDataLoss, "cannot write the port topology CSV");
  return OkStatus();
}

}  // namespace prism::counters
