#include "diagnosis/diagnose.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "diagnosis/rules/bandwidth_rule.h"
#include "diagnosis/rules/dp_group_rule.h"
#include "diagnosis/rules/late_collective_rule.h"
#include "diagnosis/rules/slow_step_rule.h"
#include "diagnosis/rules/straggler_rule.h"

namespace prism::diagnosis {

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kCritical: return "critical";
  }
  return "info";
}

const char* CauseName(Cause c) {
  switch (c) {
    case Cause::kGpu: return "gpu";
    case Cause::kNetwork: return "network";
    case Cause::kUnknown: break;
  }
  return "unknown";
}

namespace {

bool Overlaps(const Finding& a, const Finding& b) {
  return a.start_ns < b.end_ns && b.start_ns < a.end_ns;
}

}  // namespace

std::vector<Finding> Diagnose(const flow::FlowTable& flows, const PointTable& points,
                              const analysis::EndpointContext& ctx,
                              const analysis::AnalysisResults& results,
                              const DiagnosisOptions& options, BaselineStore* baselines,
                              const TakeNetworkFindings& take_network) {
  const RuleContext rc{flows, points, ctx, results, options};
  std::vector<Finding> slow = FindSlowSteps(rc, baselines);
  std::vector<Finding> stragglers = FindStragglers(rc);
  for (Finding& f : FindLateCollectiveGpus(rc)) stragglers.push_back(std::move(f));
  std::vector<Finding> dp_groups = FindSlowDpGroups(rc);
  NetworkFindings network = take_network ? take_network() : FindNetworkDegradation(rc);

  // A slow step is explained by a straggler of its job, or by degraded network its flows crossed,
  // during the same time.
  for (Finding& s : slow) {
    for (const Finding& g : stragglers) {
      if (g.job != s.job || !Overlaps(g, s) || g.severity == Severity::kInfo) continue;
      s.cause = Cause::kGpu;
      s.gpus = g.gpus;
    }
    if (s.cause != Cause::kUnknown) continue;
    for (size_t i = 0; i < network.findings.size(); ++i) {
      const Finding& n = network.findings[i];
      const auto& jobs = network.jobs_affected[i];
      if (!Overlaps(n, s) || n.severity == Severity::kInfo ||
          std::find(jobs.begin(), jobs.end(), s.job) == jobs.end())
        continue;
      s.cause = Cause::kNetwork;
      for (const auto& sw : n.switches)
        if (std::find(s.switches.begin(), s.switches.end(), sw) == s.switches.end())
          s.switches.push_back(sw);
    }
  }

  // A slow DP group's cause is the degraded network its job's flows crossed at the time.
  for (Finding& g : dp_groups) {
    for (size_t i = 0; i < network.findings.size(); ++i) {
      const Finding& n = network.findings[i];
      const auto& jobs = network.jobs_affected[i];
      if (!Overlaps(n, g) || n.severity == Severity::kInfo ||
          std::find(jobs.begin(), jobs.end(), g.job) == jobs.end())
        continue;
      g.cause = Cause::kNetwork;
      for (const auto& sw : n.switches)
        if (std::find(g.switches.begin(), g.switches.end(), sw) == g.switches.end())
          g.switches.push_back(sw);
    }
  }

  std::vector<Finding> all;
  for (auto* v : {&slow, &stragglers, &network.findings, &dp_groups})
    for (Finding& f : *v) all.push_back(std::move(f));
  std::sort(all.begin(), all.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.start_ns, a.kind, a.job, a.switches, a.gpus, a.end_ns) <
           std::tie(b.start_ns, b.kind, b.job, b.switches, b.gpus, b.end_ns);
  });
  return all;
}

}  // namespace prism::diagnosis
