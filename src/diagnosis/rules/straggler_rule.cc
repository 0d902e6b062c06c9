#include "diagnosis/rules/straggler_rule.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "diagnosis/robust_stats.h"
#include "diagnosis/rules/stage_peers.h"

namespace prism::diagnosis {
namespace {

constexpr double kMinSigmaFraction = 0.01;

using analysis::Timeline;

// op[g][k]: the op time of GPU g in step k that its stage compares (ns); 0 where it is not judged.
// The op kind compared in a step: forward ops where (nearly) every GPU of the stage has them.
std::vector<std::vector<double>> ComparableOps(const std::vector<const Timeline*>& tls,
                                               size_t steps) {
  std::vector<std::vector<double>> op(tls.size(), std::vector<double>(steps, 0));
  // A GPU whose step shows fewer pipeline events than most of its stage lost some to the
  // telemetry (a lost record takes a whole send when the send rode one QP): its op gaps then
  // span two or more ops, and with a handful of sends per step the median follows. Such a
  // step is not judged for that GPU. A straggler is slow, not silent: its steps keep their
  // events.
  std::vector<size_t> events(tls.size());
  for (size_t k = 0; k < steps; ++k) {
    for (size_t g = 0; g < tls.size(); ++g) events[g] = tls[g]->steps[k].pp_event_count;
    std::vector<size_t> sorted = events;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const size_t usual = sorted[sorted.size() / 2];
    size_t with_fwd = 0;
    for (const auto* t : tls) with_fwd += t->steps[k].median_fwd_op_ns > 0;
    const bool fwd = with_fwd * 5 >= tls.size() * 4;
    for (size_t g = 0; g < tls.size(); ++g) {
      if (events[g] < usual) continue;  // op stays 0: not judged
      op[g][k] = double(fwd ? tls[g]->steps[k].median_fwd_op_ns : tls[g]->steps[k].median_bwd_op_ns);
    }
  }
  return op;
}

// Which GPU-steps are slow against the stage, with the peers' median (and spread) per step.
struct PeerComparison {
  std::vector<std::vector<bool>> flagged;  // [g][k]
  std::vector<double> peer_median, peer_sigma;  // per step
};

PeerComparison CompareWithPeers(const std::vector<std::vector<double>>& op, size_t steps,
                                const DiagnosisOptions& o) {
  const size_t n = op.size();
  PeerComparison pc;
  pc.flagged.assign(n, std::vector<bool>(steps));
  pc.peer_median.assign(steps, 0);
  pc.peer_sigma.assign(steps, 0);
  // Each GPU's own usual op time over the window: with two GPUs a stage has no majority to
  // say which one changed, so a GPU is slow where it is slower than its peer and than itself.
  std::vector<double> own(n, 0);
  for (size_t g = 0; g < n; ++g) {
    std::vector<double> mine;
    for (size_t k = 0; k < steps; ++k)
      if (op[g][k] > 0) mine.push_back(op[g][k]);
    if (mine.size() >= 2 * size_t(o.persist_units)) own[g] = Median(std::move(mine));
  }
  for (size_t k = 0; k < steps; ++k) {
    std::vector<double> ops;
    for (size_t g = 0; g < n; ++g)
      if (op[g][k] > 0) ops.push_back(op[g][k]);
    if (ops.size() == 2 && n == 2) {
      for (size_t g = 0; g < 2; ++g) {
        const double v = op[g][k], peer = op[1 - g][k];
        // ... and its peer is not slower than its own usual either (a hiccup of the host
        // or of the whole job slows both).
        pc.flagged[g][k] = own[g] > 0 && own[1 - g] > 0 && v > peer * (1 + o.min_gpu_effect) &&
                           v > own[g] * (1 + o.min_gpu_effect) &&
                           peer < own[1 - g] * (1 + o.min_gpu_effect / 2);
      }
      pc.peer_median[k] = std::min(ops[0], ops[1]);
      pc.peer_sigma[k] = std::fabs(ops[0] - ops[1]);
      continue;
    }
    if (ops.size() < 3) continue;
    const double m = Median(ops);
    const double s = std::max(RobustSigma(ops, m), kMinSigmaFraction * m);
    pc.peer_median[k] = m;
    pc.peer_sigma[k] = s;
    for (size_t g = 0; g < n; ++g) {
      const double v = op[g][k];
      pc.flagged[g][k] = v > m + o.k * s && v > m * (1 + o.min_gpu_effect);
    }
  }
  return pc;
}

// One finding: the flagged runs of the GPUs of one host in stage `key`.
Finding StragglerFinding(const RuleContext& rc, std::pair<int, int> key,
                         const std::vector<const Timeline*>& tls, int host,
                         const std::vector<GpuRun>& hits,
                         const std::vector<std::vector<double>>& op, const PeerComparison& pc) {
  const auto& o = rc.options;
  const RunsSpan span = SpanOf(hits);
  Finding f;
  for (const GpuRun& h : hits) f.gpus.push_back(tls[h.g]->gpu);
  std::vector<double> vals, base;
  for (const GpuRun& h : hits)
    for (size_t k = h.run.first; k <= h.run.last; ++k) {
      vals.push_back(op[h.g][k] / 1e6);
      base.push_back(pc.peer_median[k] / 1e6);
    }
  SortByAddress(rc.flows.endpoints(), &f.gpus);
  // A GPU with several runs in the window is one GPU of the finding.
  f.gpus.erase(std::unique(f.gpus.begin(), f.gpus.end()), f.gpus.end());
  f.kind = FindingKind::kStragglerGpu;
  f.job = key.first;
  f.start_ns = tls[0]->steps[span.first].start_ns;
  f.end_ns = tls[0]->steps[span.last].end_ns;
  f.metric = "compute_gap_ms";
  f.value = Median(vals);
  f.baseline = Median(base);
  f.sigma = pc.peer_sigma[span.first] / 1e6;
  f.units = static_cast<int>(span.units);
  f.cause = Cause::kGpu;
  f.severity = SeverityFor(f.units, f.value / f.baseline - 1, o);
  f.summary = fmt::format(
      "{}: {} GPU(s) of host {} (stage {}) compute {:.1f} ms per op vs {:.1f} ms on their "
      "stage peers (+{:.0f}%) for {} steps",
      rc.results.jobs[key.first].id, f.gpus.size(), rc.ctx.host_names[host], key.second,
      f.value, f.baseline, 100 * (f.value / f.baseline - 1), f.units);
  return f;
}

}  // namespace

std::vector<Finding> FindStragglers(const RuleContext& rc) {
  std::vector<Finding> out;
  const auto& o = rc.options;
  const StageTimelines stages =
      TimelinesByStage(rc.results, [](const Timeline&) { return true; });
  for (const auto& [key, tls] : stages) {
    if (tls.size() < 2) continue;
    const size_t steps = CommonSteps(tls);
    if (steps == 0 || steps == SIZE_MAX) continue;
    const std::vector<std::vector<double>> op = ComparableOps(tls, steps);
    const PeerComparison pc = CompareWithPeers(op, steps, o);
    // Persistent runs per GPU, grouped by host.
    std::map<int, std::vector<GpuRun>> by_host;
    // Two GPUs compare one against the other, with no majority to outvote a noisy step: such a
    // finding needs twice the persistence.
    const int persist = tls.size() == 2 ? 2 * o.persist_units : o.persist_units;
    for (size_t g = 0; g < tls.size(); ++g)
      for (const Run& run : FlaggedRuns(pc.flagged[g], 1))
        if (static_cast<int>(run.flagged) >= persist)
          by_host[rc.ctx.host[tls[g]->gpu]].push_back({g, run});
    for (const auto& [host, hits] : by_host) {
      out.push_back(StragglerFinding(rc, key, tls, host, hits, op, pc));
    }
  }
  return out;
}

}  // namespace prism::diagnosis
