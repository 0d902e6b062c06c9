#include "diagnosis/rules/late_collective_rule.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <fmt/format.h>

#include "diagnosis/robust_stats.h"
#include "diagnosis/rules/stage_peers.h"

namespace prism::diagnosis {
namespace {

constexpr double kMinSigmaFraction = 0.01;  // of the usual step: a floor for a quiet stage

using analysis::Timeline;

// Per GPU and step, how long after the stage's early senders the GPU first sent DP bytes (ns);
// NaN where it sent none or the stage has fewer than two senders.
std::vector<std::vector<double>> Lateness(const std::vector<const Timeline*>& tls, size_t steps) {
  std::vector<std::vector<double>> late(tls.size(), std::vector<double>(steps, NAN));
  std::vector<int64_t> sends;
  for (size_t k = 0; k < steps; ++k) {
    sends.clear();
    for (const Timeline* t : tls)
      if (t->steps[k].dp_first_send_ns != 0) sends.push_back(t->steps[k].dp_first_send_ns);
    if (sends.size() < 2) continue;
    std::sort(sends.begin(), sends.end());
    const int64_t early = sends[(sends.size() - 1) / 4];  // the lower quartile
    for (size_t g = 0; g < tls.size(); ++g)
      if (tls[g]->steps[k].dp_first_send_ns != 0)
        late[g][k] = double(tls[g]->steps[k].dp_first_send_ns - early);
  }
  return late;
}

// Hits whose step spans overlap, as groups (one finding each).
std::vector<std::vector<GpuRun>> OverlappingHits(std::vector<GpuRun> hits) {
  std::sort(hits.begin(), hits.end(),
            [](const GpuRun& x, const GpuRun& y) { return x.run.first < y.run.first; });
  std::vector<std::vector<GpuRun>> groups;
  size_t group_last = 0;
  for (const GpuRun& h : hits) {
    if (groups.empty() || h.run.first > group_last) {
      groups.push_back({h});
      group_last = h.run.last;
      continue;
    }
    groups.back().push_back(h);
    group_last = std::max(group_last, h.run.last);
  }
  return groups;
}

// The runs of steps in which GPU g of the stage was late beyond the stage's spread (centre +
// k sigma), beyond `min_late_ns`, and beyond its own usual lateness, for at least persist_units.
std::vector<GpuRun> LateRuns(const std::vector<std::vector<double>>& late, size_t steps,
                             double centre, double sigma, double min_late_ns,
                             const DiagnosisOptions& o) {
  std::vector<GpuRun> hits;
  for (size_t g = 0; g < late.size(); ++g) {
    std::vector<double> mine;
    for (double x : late[g])
      if (!std::isnan(x)) mine.push_back(x);
    if (mine.size() < size_t(2 * o.persist_units)) continue;
    // Late beyond its own usual too: a GPU the stage always waits for (a slower model of GPU,
    // a host with less bandwidth) is a property of the job, not an event. Its usual is its
    // lower quartile: a straggler may be late for most of the window.
    std::sort(mine.begin(), mine.end());
    const double own = mine[mine.size() / 4];
    std::vector<bool> flagged(steps);
    for (size_t k = 0; k < steps; ++k) {
      const double x = late[g][k];
      flagged[k] = !std::isnan(x) && x > min_late_ns && x > centre + o.k * sigma &&
                   x > own + min_late_ns;
    }
    for (const Run& run : FlaggedRuns(flagged, 1))
      if (static_cast<int>(run.flagged) >= o.persist_units) hits.push_back({g, run});
  }
  return hits;
}

// One straggler finding for a group of overlapping late runs of job `job`'s stage `tls`.
Finding LateFinding(const RuleContext& rc, int job, const std::vector<const Timeline*>& tls,
                    const std::vector<std::vector<double>>& late,
                    const std::vector<GpuRun>& group, double sigma, double usual_step_ns) {
  const auto& eps = rc.flows.endpoints();
  Finding f;
  const RunsSpan span = SpanOf(group);
  std::vector<double> vals;
  const GpuRun* earliest = nullptr;  // the GPU of the group that usually sent first
  double earliest_late = INFINITY;
  for (const GpuRun& h : group) {
    f.gpus.push_back(tls[h.g]->gpu);
    std::vector<double> mine;
    for (size_t k = h.run.first; k <= h.run.last; ++k)
      if (!std::isnan(late[h.g][k])) mine.push_back(late[h.g][k]);
    for (double x : mine) vals.push_back(x / 1e6);
    const double m = Median(std::move(mine));
    if (m < earliest_late) earliest_late = m, earliest = &h;
  }
  SortByAddress(eps, &f.gpus);
  std::string names;
  for (EndpointId g : f.gpus) names += (names.empty() ? "" : ", ") + eps.Addr(g).ToString();
  f.kind = FindingKind::kStragglerGpu;
  f.job = job;
  f.start_ns = tls[0]->steps[span.first].start_ns;
  f.end_ns = tls[0]->steps[span.last].end_ns;
  f.metric = "collective_lateness_ms";
  f.value = Median(vals);
  f.baseline = usual_step_ns / 1e6;  // the lateness is judged as a share of the step
  f.sigma = sigma / 1e6;
  f.units = static_cast<int>(span.units);
  f.cause = Cause::kGpu;
  f.severity = SeverityFor(f.units, f.value / f.baseline, rc.options);
  f.summary = fmt::format(
      "{}: {} GPU(s) ({}) joined the DP collective {:.1f} ms after the other GPUs of the "
      "stage ({:.0f}% of a {:.0f} ms step) for {} steps: still computing{}",
      rc.results.jobs[size_t(job)].id, f.gpus.size(), names, f.value,
      100 * f.value / f.baseline, f.baseline, f.units,
      f.gpus.size() > 1 ? fmt::format("; {} sent first", eps.Addr(tls[earliest->g]->gpu).ToString())
                        : "");
  return f;
}

}  // namespace

std::vector<Finding> FindLateCollectiveGpus(const RuleContext& rc) {
  std::vector<Finding> out;
  const auto& o = rc.options;
  const StageTimelines stages = TimelinesByStage(rc.results, [&](const Timeline& t) {
    return t.job >= 0 && rc.results.jobs[size_t(t.job)].layout.pp == 1;
  });
  for (const auto& [key, tls] : stages) {
    if (tls.size() < 3) continue;  // two GPUs exchange pairwise: neither can start first
    const size_t steps = CommonSteps(tls);
    if (steps < size_t(2 * o.persist_units)) continue;
    const std::vector<std::vector<double>> late = Lateness(tls, steps);
    std::vector<double> step_ns, all;
    for (size_t k = 0; k < steps; ++k)
      step_ns.push_back(double(tls[0]->steps[k].end_ns - tls[0]->steps[k].start_ns));
    const double usual_step_ns = Median(step_ns);
    if (usual_step_ns <= 0) continue;
    for (const auto& v : late)
      for (double x : v)
        if (!std::isnan(x)) all.push_back(x);
    if (all.empty()) continue;
    const double centre = Median(all);
    const double sigma =
        std::max(RobustSigma(all, centre), kMinSigmaFraction * usual_step_ns);
    const double min_late_ns = o.min_gpu_effect * usual_step_ns;

    for (const std::vector<GpuRun>& group :
         OverlappingHits(LateRuns(late, steps, centre, sigma, min_late_ns, o))) {
      out.push_back(LateFinding(rc, key.first, tls, late, group, sigma, usual_step_ns));
    }
  }
  return out;
}

}  // namespace prism::diagnosis
