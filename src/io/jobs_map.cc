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

StatusOr<JobsMap> ReadJobsMapBuffer(std::string_view data, const std::string& name, Stats* stats) {
  JobsMap map;
  internal::ProblemLog log(name);
  std::map<std::string, size_t> job_index;
  auto bad = [&](uint64_t line_no, const std::string& what, std::string_view line) {
    ++map.bad_lines;
    if (stats != nullptr) stats->Add(Stat::jobs_map_bad_line);
    if (log.Want()) {
      fmt::print(stderr, "{}:{}: {}; got {} (line skipped)\n", name, line_no, what,
                 internal::Quote(line));
    }
  };
  auto add = [&](std::string_view id, std::string_view user, std::string_view job_name,
                 const std::vector<std::string>& hosts) {
    auto [it, inserted] = job_index.try_emplace(std::string(id), map.jobs.size());
    if (inserted) map.jobs.push_back({std::string(id), std::string(user), std::string(job_name)});
    for (const std::string& h : hosts) {
      std::vector<size_t>& v = map.by_host[h];
      if (std::find(v.begin(), v.end(), it->second) == v.end()) v.push_back(it->second);
    }
    ++map.lines;
  };
  static constexpr const char* kExpected =
      "expected host_or_ip,job_id,user,name (CSV) or JOBID|USER|NAME|NODELIST (squeue -o "
      "\"%i|%u|%j|%N\")";
  std::vector<std::string_view> fields;
  internal::ForEachLine(data, 1, [&](std::string_view raw, uint64_t line_no) {
    if (line_no == 1 && raw.starts_with("\xEF\xBB\xBF")) raw.remove_prefix(3);
    const std::string_view line = internal::TrimField(raw);
    if (line.empty() || line[0] == '#') return true;
    if (line.find('|') != std::string_view::npos) {
      // squeue: JOBID|USER|NAME|NODELIST; a job name may itself hold '|'.
      const size_t first = line.find('|');
      const size_t second = line.find('|', first + 1);
      const size_t last = line.rfind('|');
      if (second == std::string_view::npos || last == second) {
        bad(line_no, kExpected, line);
        return true;
      }
      const std::string_view id = internal::TrimField(line.substr(0, first));
      const std::string_view user = internal::TrimField(line.substr(first + 1, second - first - 1));
      const std::string_view job_name =
          internal::TrimField(line.substr(second + 1, last - second - 1));
      const std::string_view nodes = internal::TrimField(line.substr(last + 1));
      if (id == "JOBID" || id == "JOB_ID") return true;  // squeue's header
      if (id.empty() || user.empty()) {
        bad(line_no, std::string(kExpected) + ": empty job id or user", line);
        return true;
      }
      if (nodes.empty() || nodes == "(null)" || nodes == "(None)" || nodes == "n/a") {
        ++map.pending_lines;
        return true;
      }
      auto hosts = ExpandSlurmHostList(nodes);
      if (!hosts) {
        bad(line_no, "bad NODELIST: " + hosts.error().message, line);
        return true;
      }
      add(id, user, job_name, *hosts);
      return true;
    }
    internal::SplitCsv(line, &fields);
    if (!fields.empty() &&
        (fields[0] == "host_or_ip" || fields[0] == "host" || fields[0] == "ip")) {
      return true;  // the header
    }
    if (fields.size() != 4 && fields.size() != 3) {
      bad(line_no, fmt::format("{}: {} fields", kExpected, fields.size()), line);
      return true;
    }
    if (fields[0].empty() || fields[1].empty() || fields[2].empty()) {
      bad(line_no, std::string(kExpected) + ": empty host, job id or user", line);
      return true;
    }
    auto hosts = ExpandSlurmHostList(fields[0]);
    if (!hosts) {
      bad(line_no, "bad host_or_ip: " + hosts.error().message, line);
      return true;
    }
    add(fields[1], fields[2], fields.size() == 4 ? fields[3] : std::string_view(), *hosts);
    return true;
  });
  log.Finish();
  if (map.jobs.empty()) {
    return MakeError(ErrorCode::kDataLoss, "{}: no usable line ({} bad, {} pending jobs); {}", name,
                     map.bad_lines, map.pending_lines, kExpected);
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
