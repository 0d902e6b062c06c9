// File: diagnosis/rules/bandwidth_rule.h
// Network-side causes: degraded switches and congested links. Every data record of a training
// pair gets a relative bandwidth — its bytes per second over the median of its class (job, DP or
// PP), which removes how many channels share a NIC — and is attributed to the switches it crossed
// (its observation point and, from the topology, the leaves of both ends) and to the leaf-spine
// links (when it was observed at a spine). Per time bin, a switch (or link) whose median relative
// bandwidth is k sigma below the median of all switches (links) and at least the minimum drop
// below it is degraded in that bin. A switch most of whose links are degraded is a degraded
// switch; a degraded link whose switches are otherwise fine is a congested link. Persistent runs
// of bins become findings.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "diagnosis/finding.h"
#include "diagnosis/rules/rule_context.h"

namespace prism::diagnosis {

struct NetworkFindings {
  std::vector<Finding> findings;
  // Per finding: the jobs whose flows crossed the degraded element during its span.
  std::vector<std::vector<int>> jobs_affected;
};

// `before_grid`, when set, is called once the record classes are measured, before the cell grid
// is built: the grid is the rule's memory peak, and a caller running the rule beside other work
// (pipeline/network_rule_beside.h) holds it there until that work has returned its memory. That
// work holds the other threads meanwhile: until then the rule runs on the calling thread alone.
NetworkFindings FindNetworkDegradation(const RuleContext& rc,
                                       const std::function<void()>& before_grid = {});

// The same on records that are part of a window (the records the rule reads: a fabric
// contribution, fabric_contribution.h): the bins span the window's record starts
// [first_start_ns, last_start_ns], not only these records'. FindNetworkDegradation is this on
// the window's own span.
NetworkFindings JudgeFabric(const RuleContext& rc, int64_t first_start_ns, int64_t last_start_ns,
                            const std::function<void()>& before_grid = {});

// One switch's data-parallel traffic over the whole window, for a gauge per switch (every switch
// that carried DP data, healthy or not). A DP data record (over one MTU, both ends in one job, its
// pair labelled DP) counts at the switches it crossed, as above: its observation point and the
// leaves of both ends.
struct SwitchDpBandwidth {
  std::string name;
  size_t records = 0;
  double median_bytes_per_s = 0;  // median over those records of bytes / (end - start)
  double relative = 0;  // median over those records of their bandwidth / their job's DP median
};

// Sorted by name.
std::vector<SwitchDpBandwidth> MeasureSwitchDpBandwidth(const flow::FlowTable& flows,
                                                        const PointTable& points,
                                                        const analysis::EndpointContext& ctx,
                                                        const analysis::AnalysisResults& results);

}  // namespace prism::diagnosis
