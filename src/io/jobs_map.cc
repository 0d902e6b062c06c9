#include "io/jobs_map.h"

#include <algorithm>

#include <fmt/format.h>

#include "io/csv_util.h"
#include "io/file_reader.h"

namespace prism::io {

namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One bracket group's content, "001-004,007": the suffixes it stands for, in order.
Status ExpandRanges(std::string_view body, std::string_view whole, std::vector<std::string>* out) {
  if (body.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "empty brackets in '{}'", whole);
  }
  size_t pos = 0;
  while (pos <= body.size()) {
    size_t comma = body.find(',', pos);
    if (comma == std::string_view::npos) comma = body.size();
    const std::string_view item = body.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    const std::string_view lo = item.substr(0, dash);
    const std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    if (!AllDigits(lo) || !AllDigits(hi) || lo.size() > 18 || hi.size() > 18) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "'{}' in '{}': expected a number or a range like 001-004", item, whole);
    }
    uint64_t a = 0, b = 0;
    internal::ParseUnsigned(lo, &a);
    internal::ParseUnsigned(hi, &b);
    if (b < a) {
      return MakeError(ErrorCode::kInvalidArgument, "range '{}' in '{}' runs backwards", item,
                       whole);
    }
    if (b - a >= kMaxExpandedHosts || out->size() + (b - a) >= kMaxExpandedHosts) {
      return MakeError(ErrorCode::kInvalidArgument, "'{}' expands to more than {} hosts", whole,
                       kMaxExpandedHosts);
    }
    for (uint64_t v = a; v <= b; ++v) out->push_back(fmt::format("{:0{}}", v, lo.size()));
    pos = comma + 1;
  }
  return OkStatus();
}

// One host name with any number of bracket groups, multiplied out.
Status ExpandOne(std::string_view name, std::vector<std::string>* out) {
  if (name.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty host name");
  std::vector<std::string> partial{""};
  size_t pos = 0;
  while (pos < name.size()) {
    const size_t open = name.find('[', pos);
    const std::string_view literal =
        name.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos);
    if (literal.find(']') != std::string_view::npos) {
      return MakeError(ErrorCode::kInvalidArgument, "']' without '[' in '{}'", name);
    }
    for (std::string& p : partial) p.append(literal);
    if (open == std::string_view::npos) break;
    const size_t close = name.find(']', open);
    if (close == std::string_view::npos) {
      return MakeError(ErrorCode::kInvalidArgument, "'[' without ']' in '{}'", name);
    }
    const std::string_view body = name.substr(open + 1, close - open - 1);
    if (body.find('[') != std::string_view::npos) {
      return MakeError(ErrorCode::kInvalidArgument, "nested '[' in '{}'", name);
    }
    std::vector<std::string> suffixes;
    PRISM_RETURN_IF_ERROR(ExpandRanges(body, name, &suffixes));
    if (partial.size() * suffixes.size() > kMaxExpandedHosts) {
      return MakeError(ErrorCode::kInvalidArgument, "'{}' expands to more than {} hosts", name,
                       kMaxExpandedHosts);
    }
    std::vector<std::string> next;
    next.reserve(partial.size() * suffixes.size());
    for (const std::string& p : partial) {
      for (const std::string& s : suffixes) next.push_back(p + s);
    }
    partial = std::move(next);
    pos = close + 1;
  }
  if (out->size() + partial.size() > kMaxExpandedHosts) {
    return MakeError(ErrorCode::kInvalidArgument, "host list expands to more than {} hosts",
                     kMaxExpandedHosts);
  }
  out->insert(out->end(), partial.begin(), partial.end());
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandSlurmHostList(std::string_view list) {
  std::vector<std::string> out;
  // Commas outside brackets separate names.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) {
      return MakeError(ErrorCode::kInvalidArgument, "']' without '[' in '{}'", list);
    }
    if (c == ',' && depth == 0) {
      const std::string_view name = internal::TrimField(list.substr(start, i - start));
      PRISM_RETURN_IF_ERROR(ExpandOne(name, &out));
      start = i + 1;
    }
  }
  if (depth != 0) return MakeError(ErrorCode::kInvalidArgument, "'[' without ']' in '{}'", list);
  return out;
}

namespace {

constexpr const char* kExpectedLine =
    "expected host_or_ip,job_id,user,name (CSV) or JOBID|USER|NAME|NODELIST (squeue -o "
    "\"%i|%u|%j|%N\")";

// What one line of a jobs map says.
struct MapLine {
  enum Kind { kJob, kSkip, kPending, kBad } kind = kSkip;
  std::string_view id, user, job_name;
  std::vector<std::string> hosts;
  std::string bad;  // why, for kBad
};

MapLine Bad(std::string why) {
  MapLine m;
  m.kind = MapLine::kBad;
  m.bad = std::move(why);
  return m;
}

// squeue's JOBID|USER|NAME|NODELIST; a job name may itself hold '|'.
MapLine SqueueLine(std::string_view line) {
  const size_t first = line.find('|');
  const size_t second = line.find('|', first + 1);
  const size_t last = line.rfind('|');
  if (second == std::string_view::npos || last == second) return Bad(kExpectedLine);
  MapLine m;
  m.id = internal::TrimField(line.substr(0, first));
  m.user = internal::TrimField(line.substr(first + 1, second - first - 1));
  m.job_name = internal::TrimField(line.substr(second + 1, last - second - 1));
  const std::string_view nodes = internal::TrimField(line.substr(last + 1));
  if (m.id == "JOBID" || m.id == "JOB_ID") return {};  // squeue's header
  if (m.id.empty() || m.user.empty()) {
    return Bad(std::string(kExpectedLine) + ": empty job id or user");
  }
  if (nodes.empty() || nodes == "(null)" || nodes == "(None)" || nodes == "n/a") {
    m.kind = MapLine::kPending;
    return m;
  }
  auto hosts = ExpandSlurmHostList(nodes);
  if (!hosts) return Bad("bad NODELIST: " + hosts.error().message);
  m.hosts = std::move(*hosts);
  m.kind = MapLine::kJob;
  return m;
}

// host_or_ip,job_id,user[,name]; `fields` is scratch.
MapLine CsvLine(std::string_view line, std::vector<std::string_view>* fields) {
  internal::SplitCsv(line, fields);
  const std::vector<std::string_view>& f = *fields;
  if (!f.empty() && (f[0] == "host_or_ip" || f[0] == "host" || f[0] == "ip")) return {};
  if (f.size() != 4 && f.size() != 3) {
    return Bad(fmt::format("{}: {} fields", kExpectedLine, f.size()));
  }
  if (f[0].empty() || f[1].empty() || f[2].empty()) {
    return Bad(std::string(kExpectedLine) + ": empty host, job id or user");
  }
  auto hosts = ExpandSlurmHostList(f[0]);
  if (!hosts) return Bad("bad host_or_ip: " + hosts.error().message);
  MapLine m;
  m.kind = MapLine::kJob;
  m.id = f[1];
  m.user = f[2];
  m.job_name = f.size() == 4 ? f[3] : std::string_view();
  m.hosts = std::move(*hosts);
  return m;
}

}  // namespace

StatusOr<JobsMap> ReadJobsMapBuffer(std::string_view data, const std::string& name, Stats* stats) {
  JobsMap map;
  internal::ProblemLog log(name);
  std::map<std::string, size_t> job_index;
  auto add = [&](const MapLine& m) {
    auto [it, inserted] = job_index.try_emplace(std::string(m.id), map.jobs.size());
    if (inserted) {
      map.jobs.push_back({std::string(m.id), std::string(m.user), std::string(m.job_name)});
    }
    for (const std::string& h : m.hosts) {
      std::vector<size_t>& v = map.by_host[h];
      if (std::find(v.begin(), v.end(), it->second) == v.end()) v.push_back(it->second);
    }
    ++map.lines;
  };
  std::vector<std::string_view> fields;
  internal::ForEachLine(data, 1, [&](std::string_view raw, uint64_t line_no) {
    if (line_no == 1 && raw.starts_with("\xEF\xBB\xBF")) raw.remove_prefix(3);
    const std::string_view line = internal::TrimField(raw);
    if (line.empty() || line[0] == '#') return true;
    const MapLine m = line.find('|') != std::string_view::npos ? SqueueLine(line)
                                                               : CsvLine(line, &fields);
    switch (m.kind) {
      case MapLine::kJob: add(m); break;
      case MapLine::kPending: ++map.pending_lines; break;
      case MapLine::kSkip: break;
      case MapLine::kBad:
        ++map.bad_lines;
        if (stats != nullptr) stats->Add(Stat::jobs_map_bad_line);
        if (log.Want()) {
          fmt::print(stderr, "{}:{}: {}; got {} (line skipped)\n", name, line_no, m.bad,
                     internal::Quote(line));
        }
        break;
    }
    return true;
  });
  log.Finish();
  if (map.jobs.empty()) {
    return MakeError(ErrorCode::kDataLoss, "{}: no usable line ({} bad, {} pending jobs); {}", name,
                     map.bad_lines, map.pending_lines, kExpectedLine);
  }
  return map;
}

StatusOr<JobsMap> ReadJobsMap(const std::string& path, Stats* stats) {
  auto data = ReadWholeFile(path);
  if (!data) {
    return MakeError(ErrorCode::kNotFound, "--jobs-map {}: {}", path, data.error().message);
  }
  return ReadJobsMapBuffer(*data, path, stats);
}

}  // namespace prism::io
