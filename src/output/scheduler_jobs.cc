#include "output/scheduler_jobs.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace prism::output {

namespace {

std::string ShortName(const std::string& host) { return host.substr(0, host.find('.')); }

std::string Describe(const io::SchedulerJob& j) {
  return j.name.empty() ? fmt::format("{} ({})", j.id, j.user)
                        : fmt::format("{} ({}, {})", j.id, j.user, j.name);
}

SchedulerRef RefOf(const io::SchedulerJob& j) { return {j.id, j.user, j.name}; }

// A recognised job whose GPUs fall in more than its own scheduler job (`best`, holding
// `in_best` of them): `others` are the GPUs of every other scheduler job it reaches.
ReportFinding SpansSchedulerJobs(const io::JobsMap& map, const ReportJob& job, size_t best,
                                 size_t in_best,
                                 const std::map<size_t, std::vector<IpAddr>>& others,
                                 int64_t start_ns, int64_t end_ns) {
  ReportFinding f;
  f.kind = diagnosis::FindingKind::kSchedulerMismatch;
  f.severity = diagnosis::Severity::kWarning;
  f.job = job.id;
  f.scheduler = job.scheduler;
  f.start_ns = start_ns;
  f.end_ns = end_ns;
  f.metric = "scheduler_jobs";
  f.value = static_cast<double>(others.size() + 1);
  std::string list;
  for (const auto& [s, gpus] : others) {
    f.gpus.insert(f.gpus.end(), gpus.begin(), gpus.end());
    list += fmt::format("{}{} ({} GPUs)", list.empty() ? "" : ", ", Describe(map.jobs[s]),
                        gpus.size());
  }
  std::sort(f.gpus.begin(), f.gpus.end());
  f.units = static_cast<int>(f.gpus.size());
  f.summary = fmt::format(
      "{} spans scheduler jobs: {} holds {} of its {} GPUs, and {}; one recognised job should "
      "be one scheduler job (the recognition merged two jobs, or the jobs map is stale)",
      job.id, Describe(map.jobs[best]), in_best, job.gpus.size(), list);
  return f;
}

// Scheduler job `s` named on several recognised jobs.
ReportFinding SplitSchedulerJob(const io::JobsMap& map, size_t s,
                                const std::vector<const ReportJob*>& jobs, int64_t start_ns,
                                int64_t end_ns) {
  ReportFinding f;
  f.kind = diagnosis::FindingKind::kSchedulerMismatch;
  f.severity = diagnosis::Severity::kInfo;
  f.job = jobs.front()->id;
  f.scheduler = RefOf(map.jobs[s]);
  f.start_ns = start_ns;
  f.end_ns = end_ns;
  f.metric = "recognised_jobs";
  f.value = static_cast<double>(jobs.size());
  std::string list;
  for (const ReportJob* j : jobs) {
    list += fmt::format("{}{} ({} GPUs)", list.empty() ? "" : ", ", j->id, j->gpus.size());
  }
  f.summary = fmt::format(
      "scheduler job {} is split into {} recognised jobs: {}; one scheduler job should be one "
      "recognised job (it runs several trainings, or the recognition split one)",
      Describe(map.jobs[s]), jobs.size(), list);
  return f;
}

}  // namespace

SchedulerMatch ApplySchedulerJobs(const io::JobsMap& map, Report* report) {
  SchedulerMatch out;
  std::map<std::string, std::vector<size_t>> by_short;
  for (const auto& [host, jobs] : map.by_host) {
    std::vector<size_t>& v = by_short[ShortName(host)];
    for (size_t j : jobs) {
      if (std::find(v.begin(), v.end(), j) == v.end()) v.push_back(j);
    }
  }
  auto lookup = [&](const ReportJob& job, const IpAddr& gpu) -> const std::vector<size_t>* {
    if (auto it = map.by_host.find(gpu.ToString()); it != map.by_host.end()) return &it->second;
    auto h = job.host_of.find(gpu);
    if (h == job.host_of.end()) return nullptr;
    if (auto it = map.by_host.find(h->second); it != map.by_host.end()) return &it->second;
    if (auto it = by_short.find(ShortName(h->second)); it != by_short.end()) return &it->second;
    return nullptr;
  };
  const int64_t start_ns = report->windows.empty() ? 0 : report->windows.front().start_ns;
  const int64_t end_ns = report->windows.empty() ? 0 : report->windows.back().end_ns;
  std::vector<ReportFinding> added;
  std::map<size_t, std::vector<const ReportJob*>> named_by;  // scheduler job -> recognised jobs
  std::map<std::string, SchedulerRef> ref_of_job;
  for (ReportJob& job : report->jobs) {
    std::vector<size_t> count(map.jobs.size(), 0);
    std::vector<std::vector<size_t>> in_of_gpu(job.gpus.size());
    for (size_t g = 0; g < job.gpus.size(); ++g) {
      if (const std::vector<size_t>* c = lookup(job, job.gpus[g])) {
        in_of_gpu[g] = *c;
        for (size_t s : *c) ++count[s];
      }
    }
    size_t best = map.jobs.size();
    for (size_t s = 0; s < count.size(); ++s) {
      if (count[s] > 0 && (best == map.jobs.size() || count[s] > count[best])) best = s;
    }
    if (best == map.jobs.size()) {
      job.scheduler = {};
      ++out.jobs_unmatched;
      continue;
    }
    job.scheduler = RefOf(map.jobs[best]);
    ref_of_job[job.id] = job.scheduler;
    named_by[best].push_back(&job);
    ++out.jobs_named;
    // GPUs outside the job's own scheduler job but in another one.
    std::map<size_t, std::vector<IpAddr>> others;
    for (size_t g = 0; g < job.gpus.size(); ++g) {
      const std::vector<size_t>& in = in_of_gpu[g];
      if (in.empty() || std::find(in.begin(), in.end(), best) != in.end()) continue;
      others[in.front()].push_back(job.gpus[g]);
    }
    if (others.empty()) continue;
    added.push_back(SpansSchedulerJobs(map, job, best, count[best], others, start_ns, end_ns));
  }
  for (const auto& [s, jobs] : named_by) {
    if (jobs.size() < 2) continue;
    added.push_back(SplitSchedulerJob(map, s, jobs, start_ns, end_ns));
  }
  for (ReportFinding& f : report->findings) {
    if (auto it = ref_of_job.find(f.job); it != ref_of_job.end()) {
      f.scheduler = it->second;
    } else if (f.kind != diagnosis::FindingKind::kSchedulerMismatch) {
      f.scheduler = {};
    }
  }
  out.mismatches = added.size();
  for (ReportFinding& f : added) report->findings.push_back(std::move(f));
  return out;
}

}  // namespace prism::output
