#include "output/text_summary.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "output/report_views.h"

namespace prism::output {
namespace {

// Most hosts shown per stage and most stages shown per job before the list is abbreviated.
constexpr size_t kMaxHostsPerStage = 4;
constexpr size_t kMaxStages = 6;
constexpr size_t kMaxGpusPerFinding = 8;
// Most findings listed; the report file has them all.
constexpr size_t kMaxFindings = 20;

class Painter {
 public:
  explicit Painter(bool color) : color_(color) {}
  std::string Bold(std::string_view s) const { return Wrap("\x1b[1m", s); }
  std::string Dim(std::string_view s) const { return Wrap("\x1b[2m", s); }
  std::string Severity(diagnosis::Severity sev, std::string_view s) const {
    switch (sev) {
      case diagnosis::Severity::kCritical: return Wrap("\x1b[1;31m", s);
      case diagnosis::Severity::kWarning: return Wrap("\x1b[33m", s);
      case diagnosis::Severity::kInfo: return Wrap("\x1b[36m", s);
    }
    return std::string(s);
  }
  std::string Warn(std::string_view s) const { return Wrap("\x1b[33m", s); }

 private:
  std::string Wrap(std::string_view code, std::string_view s) const {
    if (!color_) return std::string(s);
    return fmt::format("{}{}\x1b[0m", code, s);
  }
  bool color_;
};

// 1234567 -> "1,234,567".
std::string Grouped(uint64_t n) {
  std::string digits = fmt::format("{}", n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Seconds since the report start, e.g. "+12.5s".
std::string Rel(int64_t ns, int64_t origin_ns) {
  return fmt::format("+{:.1f}s", static_cast<double>(ns - origin_ns) / 1e9);
}

// "a,b,c" or, when longer than `max`, the first max-1, "…" and the count left out.
std::string Abbreviated(const std::vector<std::string>& items, size_t max) {
  if (items.size() <= max) return fmt::format("{}", fmt::join(items, ","));
  std::vector<std::string> head(items.begin(), items.begin() + static_cast<ptrdiff_t>(max - 1));
  return fmt::format("{},…(+{})", fmt::join(head, ","), items.size() - head.size());
}

std::string StageText(const ReportJob& job, size_t s) {
  std::set<std::string> hosts;
  for (const IpAddr& gpu : job.layout.stages[s]) {
    auto it = job.host_of.find(gpu);
    hosts.insert(it != job.host_of.end() ? it->second : gpu.ToString());
  }
  std::vector<std::string> list(hosts.begin(), hosts.end());
  return fmt::format("stage{}: {}", s, Abbreviated(list, kMaxHostsPerStage));
}

std::string StageOrder(const ReportJob& job) {
  const size_t n = job.layout.stages.size();
  std::vector<std::string> parts;
  if (n <= kMaxStages) {
    for (size_t s = 0; s < n; ++s) parts.push_back(StageText(job, s));
  } else {  // first three, an ellipsis, last two
    for (size_t s = 0; s < 3; ++s) parts.push_back(StageText(job, s));
    parts.push_back(fmt::format("…({} stages)…", n - 5));
    for (size_t s = n - 2; s < n; ++s) parts.push_back(StageText(job, s));
  }
  return fmt::format("{}", fmt::join(parts, " → "));
}

std::string Seconds(double s) { return fmt::format("{:.3f}s", s); }

// Median step time per step as block characters, scaled from the series' min to max and
// averaged down to at most `width` characters.
std::string Sparkline(const std::vector<JobStepPoint>& series, size_t width) {
  static constexpr const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (series.empty()) return "";
  const size_t n = std::min(width, series.size());
  std::vector<double> v(n, 0);
  std::vector<size_t> c(n, 0);
  for (size_t i = 0; i < series.size(); ++i) {
    size_t k = i * n / series.size();
    v[k] += series[i].median_s;
    ++c[k];
  }
  for (size_t k = 0; k < n; ++k) v[k] /= static_cast<double>(std::max<size_t>(c[k], 1));
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::string out;
  for (double x : v) {
    int b = *hi > *lo ? static_cast<int>((x - *lo) / (*hi - *lo) * 7.999) : 0;
    out += kBlocks[std::clamp(b, 0, 7)];
  }
  return out;
}

// "trend +0.4%/min (first third 1.480s, last third 1.500s); per step 1.47s ▁▂▃▅▇ 1.52s" (the
// median step time over time, scaled from its lowest to its highest), or empty when too short.
std::string TrendLine(const Report& r, const ReportJob& job) {
  std::vector<JobStepPoint> series = JobStepSeries(r, job);
  StepTrend t = ComputeStepTrend(series);
  if (!t.known) return "";
  auto [lo, hi] = std::minmax_element(series.begin(), series.end(), [](const auto& a, const auto& b) {
    return a.median_s < b.median_s;
  });
  return fmt::format("trend {:+.1f}%/min (first third {}, last third {}); per step {} {} {}",
                     t.slope_pct_per_min, Seconds(t.first_s), Seconds(t.last_s),
                     Seconds(lo->median_s), Sparkline(series, 48), Seconds(hi->median_s));
}

// Counters mode: servers, step period, iterations and the per-NIC rate signature of each job.
void AppendCountersJobs(const Report& r, const Painter& p, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "{}\n",
                 p.Bold(fmt::format("Jobs: {} (from port counters)", r.jobs.size())));
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const ReportJob& job = r.jobs[i];
    const ReportCountersJob* c = i < r.counters.jobs.size() ? &r.counters.jobs[i] : nullptr;
    fmt::format_to(std::back_inserter(*out), "  {}  {} servers ({} NICs)  {:.1f} Gb/s per server\n",
                   p.Bold(job.id), job.hosts.size(), job.gpus.size(), c ? c->server_gbps : 0.0);
    if (c != nullptr) {
      std::vector<std::string> sig;
      for (size_t k = 0; k < c->nic_names.size(); ++k)
        sig.push_back(fmt::format("{} {:.0f}%", c->nic_names[k], 100 * c->signature[k]));
      fmt::format_to(std::back_inserter(*out), "    step period {}, {} iterations, median {}, p99 {}\n",
                     Seconds(c->period_s), c->iterations.size(), Seconds(job.step_time.median_s),
                     Seconds(job.step_time.p99_s));
      if (c->resolution_limit_s > 0) {
        fmt::format_to(std::back_inserter(*out),
                       "    resolution: each iteration +-{}, slow from +{} over the median{}\n",
                       Seconds(c->uncertainty_s), Seconds(c->resolution_limit_s),
                       c->merged_iterations > 0
                           ? fmt::format(" ({} iterations with no visible boundary)",
                                         c->merged_iterations)
                           : std::string());
      }
      fmt::format_to(std::back_inserter(*out), "    NIC signature: {}\n", Abbreviated(sig, 8));
    }
    fmt::format_to(std::back_inserter(*out), "    servers: {}\n", Abbreviated(job.hosts, 6));
  }
}

void AppendJobs(const Report& r, const Painter& p, std::string* out) {
  if (r.mode == "counters") return AppendCountersJobs(r, p, out);
  fmt::format_to(std::back_inserter(*out), "{}\n", p.Bold(fmt::format("Jobs: {}", r.jobs.size())));
  for (const ReportJob& job : r.jobs) {
    const ReportLayout& l = job.layout;
    std::string layout =
        l.dp > 0 ? fmt::format("DP{}×PP{}×TP{}", l.dp, l.pp, l.tp) : std::string("layout unknown");
    if (l.dp > 0 && l.microbatches > 0) layout += fmt::format(", {} micro-batches", l.microbatches);
    if (l.dp > 0 && !l.consistent) layout += " (inconsistent)";
    fmt::format_to(std::back_inserter(*out), "  {}  {} GPUs on {} hosts  {}\n", p.Bold(job.id),
                   job.gpus.size(), job.hosts.size(), layout);
    if (job.step_time.steps > 0) {
      fmt::format_to(std::back_inserter(*out), "    step time {} median, {} p99 over {} steps\n",
                     Seconds(job.step_time.median_s), Seconds(job.step_time.p99_s),
                     job.step_time.steps);
      if (std::string trend = TrendLine(r, job); !trend.empty()) {
        fmt::format_to(std::back_inserter(*out), "    {}\n", trend);
      }
    } else {
      fmt::format_to(std::back_inserter(*out), "    step time unknown (no timeline)\n");
    }
    if (!l.stages.empty()) fmt::format_to(std::back_inserter(*out), "    {}\n", StageOrder(job));
  }
}

std::string Number(double v) { return fmt::format("{:.4g}", v); }

void AppendFindings(const Report& r, const Painter& p, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "{}\n",
                 p.Bold(fmt::format("Findings: {}", r.findings.size())));
  if (r.findings.empty()) return;
  std::vector<const ReportFinding*> ranked;
  for (const auto& f : r.findings) ranked.push_back(&f);
  // Report order (by start) breaks ties, so the ranking is stable.
  std::stable_sort(ranked.begin(), ranked.end(), [](const ReportFinding* a, const ReportFinding* b) {
    if (a->severity != b->severity) return a->severity > b->severity;
    return FindingEffect(*a) > FindingEffect(*b);
  });
  if (ranked.size() > kMaxFindings) ranked.resize(kMaxFindings);
  for (const ReportFinding* f : ranked) {
    std::string sev = diagnosis::SeverityName(f->severity);
    std::transform(sev.begin(), sev.end(), sev.begin(), [](unsigned char c) { return std::toupper(c); });
    fmt::format_to(std::back_inserter(*out), "  {:<8}  {}  {}  cause: {}\n",
                   p.Severity(f->severity, fmt::format("{:<8}", sev)),
                   p.Bold(diagnosis::FindingKindName(f->kind)),
                   f->job.empty() ? std::string("(no job)") : f->job,
                   diagnosis::CauseName(f->cause));
    std::string change;
    if (f->baseline > 0 && f->value > 0) {
      change = fmt::format(" ({:+.0f}%)", (f->value / f->baseline - 1) * 100);
    }
    std::string sigma = f->sigma > 0 ? fmt::format(", sigma {}", Number(f->sigma)) : "";
    std::string units = f->units > 0 ? fmt::format(", persisted over {} steps/bins", f->units) : "";
    fmt::format_to(std::back_inserter(*out), "    {} {} vs baseline {}{}{}{}, {} to {}\n", f->metric,
                   Number(f->value), Number(f->baseline), change, sigma, units,
                   Rel(f->start_ns, r.start_ns), Rel(f->end_ns, r.start_ns));
    if (!f->gpus.empty()) {
      std::vector<std::string> gpus;
      for (const auto& g : f->gpus) gpus.push_back(g.ToString());
      fmt::format_to(std::back_inserter(*out), "    GPUs: {}\n", Abbreviated(gpus, kMaxGpusPerFinding));
    }
    if (!f->hosts.empty()) {
      fmt::format_to(std::back_inserter(*out), "    servers: {}\n",
                     Abbreviated(f->hosts, kMaxGpusPerFinding));
    }
    if (!f->switches.empty()) {
      fmt::format_to(std::back_inserter(*out), "    switches: {}\n",
                     Abbreviated(f->switches, kMaxGpusPerFinding));
    }
    if (!f->summary.empty()) fmt::format_to(std::back_inserter(*out), "    {}\n", f->summary);
  }
  if (r.findings.size() > ranked.size()) {
    fmt::format_to(std::back_inserter(*out), "  … and {} more, less severe (all are in the report)\n",
                   r.findings.size() - ranked.size());
  }
}

void AppendInput(const Report& r, const Painter& p, std::string* out) {
  fmt::format_to(std::back_inserter(*out), "{}\n", p.Bold("Input"));
  const bool counters = r.mode == "counters";
  uint64_t read = counters ? r.input.Get(Stat::counters_rows) : r.input.Get(Stat::records_read);
  std::string from;
  if (!r.sources.empty()) {
    std::vector<std::string> names;
    for (const auto& s : r.sources) {
      names.push_back(fmt::format("{} ({}, {})", s.path, s.format, Grouped(s.records)));
    }
    from = fmt::format(" from {}", fmt::join(names, ", "));
  }
  fmt::format_to(std::back_inserter(*out), "  {} {} read{}\n", Grouped(read),
                 counters ? "counter polls" : "records", from);
  uint64_t skipped = r.input.SkippedTotal();
  if (skipped > 0) {
    fmt::format_to(std::back_inserter(*out), "  {}\n",
                   p.Warn(fmt::format("{} skipped as bad:", Grouped(skipped))));
  }
  const auto& values = r.input.values();
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0 || kStatInfo[i].severity == StatSeverity::kInfo) continue;
    fmt::format_to(std::back_inserter(*out), "    {} {}: {}\n", kStatInfo[i].name,
                   Grouped(values[i]), kStatInfo[i].description);
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0 || kStatInfo[i].severity != StatSeverity::kInfo ||
        static_cast<Stat>(i) == Stat::records_read || static_cast<Stat>(i) == Stat::counters_rows) {
      continue;
    }
    fmt::format_to(std::back_inserter(*out), "  note: {} {}: {}\n", kStatInfo[i].name,
                   Grouped(values[i]), kStatInfo[i].description);
  }
}

}  // namespace

double FindingEffect(const ReportFinding& f) {
  if (!(f.value > 0) || !(f.baseline > 0)) return 1;
  return std::max(f.value / f.baseline, f.baseline / f.value);
}

std::string FormatSummary(const Report& r, bool color) {
  Painter p(color);
  std::string out;
  int64_t first_ns = r.end_ns, last_ns = r.start_ns;
  for (const ReportWindow& w : r.windows) {
    first_ns = std::min(first_ns, w.records_start_ns);
    last_ns = std::max(last_ns, w.records_end_ns);
  }
  if (r.mode == "counters") {
    const ReportCounters& c = r.counters;
    fmt::format_to(std::back_inserter(out), "{}\n",
                   p.Bold(fmt::format("llmprism (port counters): {} ports, {} polls over {:.0f}s; "
                                      "poll {:.3f}s (p90 {:.3f}s), refresh {:.2f}s, {:.0f}% stale zeros",
                                      c.ports, Grouped(c.polls), (r.end_ns - r.start_ns) / 1e9,
                                      c.poll_s, c.poll_p90_s, c.refresh_s,
                                      100 * c.stale_zero_fraction)));
    AppendJobs(r, p, &out);
    AppendFindings(r, p, &out);
    AppendInput(r, p, &out);
    return out;
  }
  fmt::format_to(std::back_inserter(out), "{}\n",
                 p.Bold(fmt::format("llmprism: {} window{} of {:g}s; records from {} to {}",
                                    r.windows.size(), r.windows.size() == 1 ? "" : "s",
                                    r.window_s, Rel(first_ns, r.start_ns),
                                    Rel(last_ns, r.start_ns))));
  for (const ReportWindow& w : r.windows) {
    if (w.jobs == 0) {
      fmt::format_to(std::back_inserter(out), "{}\n",
                     p.Warn(fmt::format("warning: window {} to {} ({} records): no job recognised",
                                        Rel(w.start_ns, r.start_ns), Rel(w.end_ns, r.start_ns),
                                        Grouped(w.records))));
    }
  }
  AppendJobs(r, p, &out);
  AppendFindings(r, p, &out);
  AppendInput(r, p, &out);
  return out;
}

}  // namespace prism::output
