// File: output/report_test_util.h
// Hand-built windows for the output tests: a FlowTable whose endpoint ids deliberately differ from
// address order, and builders for AnalysisResults / Findings that name GPUs by address.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "analysis/analysis_results.h"
#include "analysis/endpoint_context.h"
#include "core/ip_addr.h"
#include "core/status.h"
#include "diagnosis/finding.h"
#include "flow/flow_table.h"
#include "output/report.h"

namespace prism::output::testing {

inline IpAddr Ip(std::string_view s) { return *IpAddr::Parse(s); }

// A window: its flow table interns `addrs` in the order given (so ids follow that order, not the
// address order), and results/findings are filled by the test through Id().
struct TestWindow {
  int64_t start_ns = 0, end_ns = 0;
  flow::FlowTable flows;
  analysis::EndpointContext ctx;
  analysis::AnalysisResults results;
  std::vector<diagnosis::Finding> findings;

  TestWindow(int64_t start, int64_t end, const std::vector<std::string>& addrs) {
    start_ns = start;
    end_ns = end;
    for (size_t i = 0; i + 1 < addrs.size(); i += 2) Record(addrs[i], addrs[i + 1]);
    if (addrs.size() % 2 == 1) Record(addrs.back(), addrs.front());
    // Host of a.b.c.d: "h<c>" (GPUs 10.0.<h>.<g>).
    ctx.host.resize(flows.endpoints().size());
    for (EndpointId e = 0; e < flows.endpoints().size(); ++e) {
      std::string name = fmt::format("h{}", flows.endpoints().Addr(e).bytes()[14]);
      auto it = std::find(ctx.host_names.begin(), ctx.host_names.end(), name);
      if (it == ctx.host_names.end()) {
        ctx.host_names.push_back(name);
        it = ctx.host_names.end() - 1;
      }
      ctx.host[e] = static_cast<int>(it - ctx.host_names.begin());
    }
    ctx.is_gpu.assign(flows.endpoints().size(), 1);
  }

  void Record(const std::string& a, const std::string& b) {
    FlowRecord r;
    r.start_ns = start_ns;
    r.end_ns = start_ns + 1;
    r.src = Ip(a);
    r.dst = Ip(b);
    r.bytes = 100;
    flows.OnRecord(r);
  }

  EndpointId Id(std::string_view addr) const {
    EndpointId id = flows.endpoints().Find(Ip(addr));
    PRISM_CHECK(id < flows.endpoints().size());
    return id;
  }
  std::vector<EndpointId> Ids(const std::vector<std::string>& addrs) const {
    std::vector<EndpointId> out;
    for (const auto& a : addrs) out.push_back(Id(a));
    return out;
  }

  // Adds a job; `stages` may be empty.
  int AddJob(const std::vector<std::string>& gpus, int dp, int pp, int tp,
             const std::vector<std::vector<std::string>>& stages = {}) {
    analysis::Job job;
    job.id = fmt::format("job{}", results.jobs.size());
    job.gpus = Ids(gpus);
    for (EndpointId g : job.gpus) {
      const std::string& h = ctx.host_names[ctx.host[g]];
      if (std::find(job.hosts.begin(), job.hosts.end(), h) == job.hosts.end()) job.hosts.push_back(h);
    }
    std::sort(job.hosts.begin(), job.hosts.end());
    job.layout.dp = dp;
    job.layout.pp = pp;
    job.layout.tp = tp;
    job.layout.microbatches = 4;
    for (const auto& s : stages) job.layout.stages.push_back(Ids(s));
    job.layout.consistent = !stages.empty();
    results.jobs.push_back(std::move(job));
    return static_cast<int>(results.jobs.size() - 1);
  }

  void AddPair(const std::string& a, const std::string& b, int job, analysis::PairLabel label,
               uint32_t steps = 3) {
    analysis::Pair p;
    p.a = Id(a);
    p.b = Id(b);
    p.job = job;
    p.label = label;
    p.evidence.records = 10;
    p.evidence.steps = steps;
    p.evidence.rule = "test";
    results.pairs.push_back(p);
  }

  // Steps of `durations_s` back to back from `from_ns`.
  void AddTimeline(const std::string& gpu, int job, int stage, int64_t from_ns,
                   const std::vector<double>& durations_s) {
    analysis::Timeline t;
    t.gpu = Id(gpu);
    t.job = job;
    t.stage = stage;
    int64_t at = from_ns;
    for (double d : durations_s) {
      analysis::TimelineStep s;
      s.start_ns = at;
      s.end_ns = at + static_cast<int64_t>(d * 1e9);
      s.dp_start_ns = s.end_ns - 1000;
      s.dp_end_ns = s.end_ns;
      at = s.end_ns;
      t.steps.push_back(s);
    }
    results.timelines.push_back(std::move(t));
  }

  diagnosis::Finding& AddFinding(std::string_view kind, diagnosis::Severity sev, int job,
                                 const std::vector<std::string>& gpus, int64_t start, int64_t end,
                                 double value, double baseline) {
    diagnosis::Finding f;
    f.kind = *diagnosis::ParseFindingKind(kind);  // a kind name, as reports write it
    f.severity = sev;
    f.job = job;
    f.gpus = Ids(gpus);
    f.start_ns = start;
    f.end_ns = end;
    f.metric = "step_duration_s";
    f.value = value;
    f.baseline = baseline;
    f.sigma = 0.01;
    f.units = 3;
    f.cause = diagnosis::Cause::kGpu;
    f.summary = "test finding";
    findings.push_back(std::move(f));
    return findings.back();
  }

  WindowInput Input() const {
    WindowInput in;
    in.start_ns = start_ns;
    in.end_ns = end_ns;
    in.SetFlows(flows);
    in.context = &ctx;
    in.results = &results;
    in.findings = &findings;
    return in;
  }
};

}  // namespace prism::output::testing
