#include "output/report.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "core/status.h"

namespace prism::output {
namespace {

std::vector<IpAddr> Addrs(const EndpointTable& endpoints, const std::vector<EndpointId>& ids) {
  std::vector<IpAddr> out;
  out.reserve(ids.size());
  for (EndpointId id : ids) out.push_back(endpoints.Addr(id));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());  // GPU lists are sets
  return out;
}

ReportLayout ConvertLayout(const EndpointTable& endpoints, const analysis::Layout& in) {
  ReportLayout out;
  out.dp = in.dp;
  out.pp = in.pp;
  out.tp = in.tp;
  out.microbatches = in.microbatches;
  out.consistent = in.consistent;
  out.stages.reserve(in.stages.size());
  for (const auto& stage : in.stages) out.stages.push_back(Addrs(endpoints, stage));
  return out;
}

ReportStep ConvertStep(const EndpointTable& endpoints, const analysis::TimelineStep& in) {
  ReportStep out;
  out.start_ns = in.start_ns;
  out.end_ns = in.end_ns;
  out.dp_start_ns = in.dp_start_ns;
  out.dp_end_ns = in.dp_end_ns;
  out.compute_ns = in.compute_ns;
  out.bubble_ns = in.bubble_ns;
  out.pp_events.reserve(in.pp_events.size());
  for (const auto& e : in.pp_events) {
    out.pp_events.push_back(
        ReportPpEvent{e.start_ns, e.end_ns, endpoints.Addr(e.peer), e.forward, e.outgoing});
  }
  return out;
}

auto StepKey(const ReportStep& s) { return std::tie(s.start_ns, s.end_ns); }

// Whether a window's value (starting at `start_ns`, `good` = consistent layout / known label)
// replaces the one kept from the window at `kept_start_ns`: a good value beats a poor one, and
// among equals the later window wins.
bool Prefer(int64_t start_ns, bool good, int64_t kept_start_ns, bool kept_good) {
  if (good != kept_good) return good;
  return start_ns >= kept_start_ns;
}

// The same for a pair's label, which also weighs how much of the pair each window saw: a later
// window that holds fewer than half the steps of the kept one (a window cut short at the end of
// the input, or a pair gone quiet) does not replace a label decided on more steps, whose rules
// (step order, direction counts) need several steps to hold.
bool PreferPairLabel(int64_t start_ns, bool known, uint32_t steps, int64_t kept_start_ns,
                     bool kept_known, uint32_t kept_steps) {
  if (known != kept_known) return known;
  if (2 * uint64_t(steps) < kept_steps) return false;
  return start_ns >= kept_start_ns;
}

}  // namespace

ReportFinding ConvertFinding(const EndpointTable& endpoints, const diagnosis::Finding& f) {
  ReportFinding r;
  r.kind = f.kind;
  r.severity = f.severity;
  r.gpus = Addrs(endpoints, f.gpus);
  r.switches = f.switches;
  std::sort(r.switches.begin(), r.switches.end());
  r.start_ns = f.start_ns;
  r.end_ns = f.end_ns;
  r.metric = f.metric;
  r.value = f.value;
  r.baseline = f.baseline;
  r.sigma = f.sigma;
  r.units = f.units;
  r.cause = f.cause;
  r.summary = f.summary;
  return r;
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = pos - static_cast<double>(lo);
  // Only the two values around pos are needed, not the whole order: the lo-th smallest, and the
  // least of those after it for the next (a full sort of a job's step durations, twice per job,
  // was a third of building the report at 10,000 GPUs).
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(lo), values.end());
  const double at_lo = values[lo];
  const double at_hi =
      hi == lo ? at_lo : *std::min_element(values.begin() + static_cast<ptrdiff_t>(hi), values.end());
  return at_lo + (at_hi - at_lo) * frac;
}

void ReportBuilder::AddSource(std::string path, std::string format, uint64_t records) {
  sources_.push_back(ReportSource{std::move(path), std::move(format), records});
}

void ReportBuilder::AddWindow(const WindowInput& w) {
  PRISM_CHECK(w.endpoints != nullptr && w.results != nullptr);
  const std::vector<size_t> job_map = MergeJobs(w);
  MergePairs(w, job_map);
  MergeTimelines(w, job_map);
  MergeFindings(w, job_map);

  ReportWindow rw;
  rw.start_ns = w.start_ns;
  rw.end_ns = w.end_ns;
  rw.records = w.records;
  rw.records_start_ns = w.records_start_ns;
  rw.records_end_ns = w.records_end_ns;
  rw.jobs = w.results->jobs.size();
  rw.findings = w.findings != nullptr ? w.findings->size() : 0;
  windows_.push_back(rw);
}

size_t ReportBuilder::MergedJob(const std::vector<size_t>& job_map, int j) {
  return j >= 0 && static_cast<size_t>(j) < job_map.size() ? job_map[j] : kNoJob;
}

std::vector<size_t> ReportBuilder::MergeJobs(const WindowInput& w) {
  const EndpointTable& endpoints = *w.endpoints;
  const analysis::AnalysisResults& res = *w.results;
  std::vector<size_t> job_map(res.jobs.size(), kNoJob);
  for (size_t j = 0; j < res.jobs.size(); ++j) {
    const analysis::Job& job = res.jobs[j];
    std::vector<IpAddr> gpus = Addrs(endpoints, job.gpus);
    auto [it, inserted] = job_by_gpus_.try_emplace(gpus, jobs_.size());
    if (inserted) {
      jobs_.push_back(JobAcc{});
      jobs_.back().gpus = gpus;
      jobs_.back().first_start_ns = w.start_ns;
    }
    JobAcc& acc = jobs_[it->second];
    job_map[j] = it->second;
    ++acc.windows;
    acc.first_start_ns = std::min(acc.first_start_ns, w.start_ns);
    ReportLayout layout = ConvertLayout(endpoints, job.layout);
    if (inserted || Prefer(w.start_ns, layout.consistent, acc.layout_start_ns, acc.layout.consistent)) {
      acc.layout = std::move(layout);
      acc.layout_start_ns = w.start_ns;
      acc.hosts = job.hosts;
      std::sort(acc.hosts.begin(), acc.hosts.end());
    }
    if (w.context != nullptr) {
      for (EndpointId g : job.gpus) {
        if (g < w.context->host.size()) {
          acc.host_of[endpoints.Addr(g)] = w.context->host_names[w.context->host[g]];
        }
      }
    }
  }
  return job_map;
}

void ReportBuilder::MergePairs(const WindowInput& w, const std::vector<size_t>& job_map) {
  for (const analysis::Pair& p : w.results->pairs) {
    IpAddr a = w.endpoints->Addr(p.a), b = w.endpoints->Addr(p.b);
    if (b < a) std::swap(a, b);
    auto [it, inserted] = pairs_.try_emplace({a, b});
    PairAcc& acc = it->second;
    bool known = p.label != analysis::PairLabel::kUnknown;
    bool acc_known = acc.label != analysis::PairLabel::kUnknown;
    if (inserted || PreferPairLabel(w.start_ns, known, p.evidence.steps, acc.start_ns, acc_known,
                                    acc.evidence.steps)) {
      acc.job = MergedJob(job_map, p.job);
      acc.label = p.label;
      acc.evidence = p.evidence;
      acc.start_ns = w.start_ns;
    }
  }
}

void ReportBuilder::MergeTimelines(const WindowInput& w, const std::vector<size_t>& job_map) {
  for (const analysis::Timeline& t : w.results->timelines) {
    TimelineAcc& acc = timelines_[{w.endpoints->Addr(t.gpu), MergedJob(job_map, t.job)}];
    if (t.stage >= 0 && w.start_ns >= acc.stage_start_ns) {
      acc.stage = t.stage;
      acc.stage_start_ns = w.start_ns;
    }
    // Sized once: grown step by step, each GPU's list took five allocations at ten steps, in a
    // heap just trimmed into 4 KiB pages (pipeline/analyze_window.cc).
    acc.steps.reserve(acc.steps.size() + t.steps.size());
    for (const auto& s : t.steps) acc.steps.push_back(ConvertStep(*w.endpoints, s));
  }
}

void ReportBuilder::MergeFindings(const WindowInput& w, const std::vector<size_t>& job_map) {
  if (w.findings == nullptr) return;
  for (const diagnosis::Finding& f : *w.findings) {
    FindingAcc acc;
    acc.job = MergedJob(job_map, f.job);
    acc.finding = ConvertFinding(*w.endpoints, f);
    findings_.push_back(std::move(acc));
  }
}

ReportBuilder::JobNumbering ReportBuilder::NumberJobs() const {
  JobNumbering n;
  n.order.resize(jobs_.size());
  for (size_t i = 0; i < n.order.size(); ++i) n.order[i] = i;
  auto job_key = [&](size_t i) {
    static const IpAddr kNone;
    const JobAcc& j = jobs_[i];
    return std::make_tuple(j.gpus.empty() ? kNone : j.gpus.front(), j.first_start_ns, j.gpus);
  };
  std::sort(n.order.begin(), n.order.end(),
            [&](size_t x, size_t y) { return job_key(x) < job_key(y); });
  n.ids.resize(jobs_.size());
  n.rank.resize(jobs_.size());
  for (size_t k = 0; k < n.order.size(); ++k) {
    n.ids[n.order[k]] = fmt::format("job{}", k);
    n.rank[n.order[k]] = k;
  }
  return n;
}

void ReportBuilder::AddTimelines(const JobNumbering& jobs, Report* report) const {
  std::vector<std::vector<double>> durations(jobs_.size());
  std::vector<size_t> max_steps(jobs_.size(), 0);
  std::vector<std::pair<std::pair<IpAddr, size_t>, const TimelineAcc*>> tl;
  tl.reserve(timelines_.size());
  for (const auto& [key, acc] : timelines_) {
    tl.push_back({{key.first, key.second == kNoJob ? kNoJob : jobs.rank[key.second]}, &acc});
  }
  std::sort(tl.begin(), tl.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  report->timelines.reserve(tl.size());
  for (const auto& [key, acc] : tl) {
    ReportTimeline t;
    t.gpu = key.first;
    size_t job = key.second == kNoJob ? kNoJob : jobs.order[key.second];
    t.job = jobs.IdOf(job);
    t.stage = acc->stage;
    t.steps = acc->steps;
    std::stable_sort(t.steps.begin(), t.steps.end(),
                     [](const ReportStep& x, const ReportStep& y) { return StepKey(x) < StepKey(y); });
    // A step reported twice (identical boundaries, e.g. by overlapping windows) counts once.
    t.steps.erase(std::unique(t.steps.begin(), t.steps.end(),
                              [](const ReportStep& x, const ReportStep& y) {
                                return StepKey(x) == StepKey(y);
                              }),
                  t.steps.end());
    if (job != kNoJob) {
      for (const auto& s : t.steps) durations[job].push_back(static_cast<double>(s.end_ns - s.start_ns) / 1e9);
      max_steps[job] = std::max(max_steps[job], t.steps.size());
    }
    report->timelines.push_back(std::move(t));
  }
  for (size_t k = 0; k < jobs.order.size(); ++k) {
    size_t j = jobs.order[k];
    report->jobs[k].step_time =
        StepTimeSummary{Quantile(durations[j], 0.5), Quantile(durations[j], 0.99), max_steps[j]};
  }
}

void ReportBuilder::AddFindings(const JobNumbering& jobs, Report* report) const {
  // By (start, kind, job number, gpus, switches, metric, end, value, summary).
  std::vector<std::pair<size_t, ReportFinding>> findings;
  findings.reserve(findings_.size());
  for (const FindingAcc& acc : findings_) {
    findings.emplace_back(acc.job == kNoJob ? kNoJob : jobs.rank[acc.job], acc.finding);
    findings.back().second.job = jobs.IdOf(acc.job);
  }
  std::stable_sort(findings.begin(), findings.end(), [](const auto& x, const auto& y) {
    const ReportFinding& a = x.second;
    const ReportFinding& b = y.second;
    return std::tie(a.start_ns, a.kind, x.first, a.gpus, a.switches, a.metric, a.end_ns, a.value,
                    a.summary) < std::tie(b.start_ns, b.kind, y.first, b.gpus, b.switches,
                                          b.metric, b.end_ns, b.value, b.summary);
  });
  report->findings.reserve(findings.size());
  for (auto& [r, f] : findings) report->findings.push_back(std::move(f));
}

Report ReportBuilder::Build() const {
  Report report;
  report.window_s = window_s_;
  report.input = stats_;
  report.sources = sources_;
  report.windows = windows_;
  std::sort(report.windows.begin(), report.windows.end(),
            [](const ReportWindow& x, const ReportWindow& y) {
              return std::tie(x.start_ns, x.end_ns) < std::tie(y.start_ns, y.end_ns);
            });
  if (!report.windows.empty()) {
    report.start_ns = report.windows.front().start_ns;
    for (const auto& w : report.windows) report.end_ns = std::max(report.end_ns, w.end_ns);
  }

  const JobNumbering numbering = NumberJobs();
  report.jobs.reserve(jobs_.size());
  for (size_t i : numbering.order) {
    const JobAcc& acc = jobs_[i];
    ReportJob job;
    job.id = numbering.ids[i];
    job.gpus = acc.gpus;
    job.hosts = acc.hosts;
    job.host_of = acc.host_of;
    job.layout = acc.layout;
    job.windows = acc.windows;
    report.jobs.push_back(std::move(job));
  }
  report.pairs.reserve(pairs_.size());
  for (const auto& [key, acc] : pairs_) {  // std::map: already in (a, b) order
    report.pairs.push_back(
        ReportPair{key.first, key.second, numbering.IdOf(acc.job), acc.label, acc.evidence});
  }
  AddTimelines(numbering, &report);
  AddFindings(numbering, &report);
  return report;
}

}  // namespace prism::output
