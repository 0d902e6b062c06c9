#include "output/counters_report.h"

#include <algorithm>
#include <set>

#include "core/ip_addr.h"

namespace prism::output {

using counters::CountersFinding;
using counters::CountersJob;
using counters::CountersResult;
using counters::Iteration;
using counters::ServerResult;

namespace {

std::string JobId(int j) { return j < 0 ? std::string() : "job" + std::to_string(j); }

// A counters job as a report job: its servers are the hosts, their NIC addresses the GPUs.
ReportJob MakeJob(const CountersResult& result, size_t j) {
  const CountersJob& job = result.jobs[j];
  ReportJob rj;
  rj.id = JobId(static_cast<int>(j));
  std::set<std::string> hosts;
  for (int s : job.servers) {
    const ServerResult& sv = result.servers[s];
    hosts.insert(sv.name);
    for (const std::string& ip : sv.nic_ips) {
      if (auto a = IpAddr::Parse(ip)) {
        rj.gpus.push_back(*a);
        rj.host_of[*a] = sv.name;
      }
    }
  }
  std::sort(rj.gpus.begin(), rj.gpus.end());
  rj.hosts.assign(hosts.begin(), hosts.end());
  rj.step_time.median_s = job.step_median_s;
  rj.step_time.p99_s = job.step_p99_s;
  rj.step_time.steps = job.iterations.size();
  rj.windows = 1;
  return rj;
}

// The job's counters-mode details: period, NIC signature, iterations, traffic plot.
ReportCountersJob MakeCountersJob(const CountersJob& job, size_t j) {
  ReportCountersJob cj;
  cj.id = JobId(static_cast<int>(j));
  cj.period_s = job.period_s;
  cj.period_strength = job.strength;
  cj.server_gbps = job.server_gbps;
  cj.nic_names = job.nic_names;
  cj.signature = job.signature;
  for (const Iteration& it : job.iterations)
    cj.iterations.emplace_back(it.start_ms * 1'000'000, it.end_ms * 1'000'000);
  cj.boundary_s = job.resolution.boundary_s;
  cj.uncertainty_s = job.resolution.uncertainty_s;
  cj.resolution_limit_s = job.resolution.limit_s;
  cj.merged_iterations = job.merged_iterations;
  cj.plot_start_ns = job.plot_start_ms * 1'000'000;
  cj.plot_bin_s = job.plot_bin_s;
  cj.traffic_gbps = job.traffic_gbps;
  return cj;
}

ReportFinding MakeFinding(const CountersResult& result, const CountersFinding& f) {
  ReportFinding rf;
  rf.kind = f.kind;
  rf.severity = f.severity;
  rf.job = JobId(f.job);
  for (int s : f.servers) rf.hosts.push_back(result.servers[s].name);
  std::sort(rf.hosts.begin(), rf.hosts.end());
  rf.start_ns = f.start_ms * 1'000'000;
  rf.end_ns = f.end_ms * 1'000'000;
  rf.metric = f.metric;
  rf.value = f.value;
  rf.baseline = f.baseline;
  rf.sigma = f.sigma;
  rf.units = f.units;
  rf.cause = diagnosis::Cause::kUnknown;
  rf.summary = f.summary;
  return rf;
}

}  // namespace

Report BuildCountersReport(const CountersResult& result, const counters::CountersData& data,
                           const std::vector<CountersSource>& sources, const Stats& stats) {
  Report r;
  r.mode = "counters";
  r.start_ns = data.first_ms * 1'000'000;
  r.end_ns = data.last_ms * 1'000'000;
  r.window_s = (data.last_ms - data.first_ms) / 1000.0;
  for (const CountersSource& s : sources) r.sources.push_back({s.path, s.format, s.polls});
  r.input = stats;
  ReportWindow w;
  w.start_ns = w.records_start_ns = r.start_ns;
  w.end_ns = w.records_end_ns = r.end_ns;
  w.records = data.rows;
  w.jobs = result.jobs.size();
  w.findings = result.findings.size();
  r.windows.push_back(w);

  ReportCounters& c = r.counters;
  c.poll_s = result.polls.poll_s;
  c.poll_p90_s = result.polls.poll_p90_s;
  c.refresh_s = result.polls.refresh_s;
  c.stale_zero_fraction = result.polls.stale_zero_fraction;
  c.bin_s = result.grid.bin_s;
  c.ports = data.ports.size();
  c.polls = data.rows;
  c.bytes = result.bytes;
  for (const ServerResult& s : result.servers) {
    c.servers.push_back({s.name, JobId(s.job), s.mean_gbps, s.period.period_s, s.period.strength,
                         s.job_correlation, s.nics, s.nic_gbps});
  }
  for (size_t j = 0; j < result.jobs.size(); ++j) {
    r.jobs.push_back(MakeJob(result, j));
    c.jobs.push_back(MakeCountersJob(result.jobs[j], j));
  }
  for (const CountersFinding& f : result.findings) r.findings.push_back(MakeFinding(result, f));
  return r;
}

}  // namespace prism::output
