// File: output/report_views_test_util.h
// A small hand-built Report for the renderer tests (report_views, chrome_trace, html_report): one
// job of DP2 x PP2 (GPUs 10.0.0.1/2 in stage 0, 10.0.1.1/2 in stage 1; replicas .1 -> .1 and
// .2 -> .2), steps of 1 s with a forward send at +100 ms, a backward send at +500 ms (10 ms each)
// and the DP phase in the last 100 ms, and a straggler finding on 10.0.1.2.
#pragma once

#include <string>
#include <vector>

#include "output/report.h"

namespace prism::output::testing {

inline constexpr int64_t kViewT0 = 1'700'000'000'123'456'789;
inline constexpr int64_t kViewMs = 1'000'000;

inline Report ViewsReport(int steps = 3) {
  Report r;
  r.window_s = 60;
  r.start_ns = kViewT0;
  r.end_ns = kViewT0 + 60'000 * kViewMs;
  ReportWindow w;
  w.start_ns = r.start_ns;
  w.end_ns = r.end_ns;
  w.records_start_ns = r.start_ns;
  w.records_end_ns = r.start_ns + steps * 1000 * kViewMs;
  w.records = 100;
  w.jobs = 1;
  r.windows.push_back(w);
  auto ip = [](const char* s) { return *IpAddr::Parse(s); };
  ReportJob job;
  job.id = "job0";
  job.gpus = {ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.1.1"), ip("10.0.1.2")};
  job.hosts = {"h0", "h1"};
  for (const IpAddr& g : job.gpus) job.host_of[g] = g.ToString().substr(0, 6) == "10.0.0" ? "h0" : "h1";
  job.layout = {2, 2, 1, 4, true, {{job.gpus[0], job.gpus[1]}, {job.gpus[2], job.gpus[3]}}};
  job.step_time = {1.0, 1.0, static_cast<size_t>(steps)};
  job.windows = 1;
  r.jobs.push_back(job);
  for (int g = 0; g < 4; ++g) {
    ReportTimeline t;
    t.gpu = job.gpus[g];
    t.job = "job0";
    t.stage = g / 2;
    const IpAddr peer = job.gpus[(g + 2) % 4];
    const bool first_stage = g < 2;
    for (int k = 0; k < steps; ++k) {
      ReportStep s;
      s.start_ns = kViewT0 + (k * 1000 + 7) * kViewMs + g;  // a few ns apart per GPU
      s.end_ns = s.start_ns + 1000 * kViewMs;
      s.dp_start_ns = s.end_ns - 100 * kViewMs;
      s.dp_end_ns = s.end_ns;
      s.compute_ns = 600 * kViewMs;
      s.bubble_ns = 280 * kViewMs;
      // Forward: stage 0 sends at +100 ms; backward: stage 1 sends at +500 ms.
      ReportPpEvent fwd{s.start_ns + 100 * kViewMs - (first_stage ? 0 : 2),
                        s.start_ns + 110 * kViewMs - (first_stage ? 0 : 2), peer, true, first_stage};
      ReportPpEvent bwd{s.start_ns + 500 * kViewMs + (first_stage ? 2 : 0),
                        s.start_ns + 510 * kViewMs + (first_stage ? 2 : 0), peer, false, !first_stage};
      s.pp_events = {fwd, bwd};
      t.steps.push_back(s);
    }
    r.timelines.push_back(t);
  }
  ReportFinding f;
  f.kind = diagnosis::FindingKind::kStragglerGpu;
  f.severity = diagnosis::Severity::kCritical;
  f.job = "job0";
  f.gpus = {job.gpus[3]};
  f.start_ns = kViewT0 + 1000 * kViewMs;
  f.end_ns = kViewT0 + 2000 * kViewMs;
  f.metric = "compute_gap_ms";
  f.value = 15;
  f.baseline = 12;
  f.units = 2;
  f.cause = diagnosis::Cause::kGpu;
  f.summary = "GPU 10.0.1.2 computes slowly </script><b>";
  r.findings.push_back(f);
  ReportFinding sw = f;
  sw.kind = diagnosis::FindingKind::kDegradedSwitch;
  sw.severity = diagnosis::Severity::kWarning;
  sw.job = "";
  sw.gpus = {};
  sw.switches = {"spine0"};
  sw.metric = "relative_bandwidth";
  sw.value = 0.4;
  sw.baseline = 1;
  sw.summary = "switch spine0 slow";
  r.findings.push_back(sw);
  r.input.Add(Stat::records_read, 100);
  return r;
}

}  // namespace prism::output::testing
