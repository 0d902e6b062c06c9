// File: diagnosis/rules/fabric_contribution.h
// What the bandwidth rule's fabric part (bandwidth_rule.h) needs of a window's records, taken
// apart from the window so that the parts of several shards can be joined and judged as one.
//
// The rule's switch and link judgement is not per job: per time bin a spine's typical relative
// bandwidth is taken over every record through it, whatever its job, and compared with every
// other spine. A shard holds the records of its jobs only, and a median (or interquartile mean)
// of the shards' figures is not the figure of all records. What each shard can work out alone is
// per job: each record's class (its job, DP or PP) and so its relative bandwidth, and an
// endpoint's pairs' paces. So a shard's contribution is its records the rule reads at all — data
// records (over 4 KiB, end after start) with both ends in one job — reduced to the columns the
// rule reads, with the names those columns refer to (jobs, endpoints and their leaves, points,
// labelled pairs) and the span of the window's record starts (the rule's bins start at the
// window's first record, whatever its kind). Joined, the contributions of every shard give the
// records one `serve` would judge, and EvaluateFabric (fabric_evaluation.h) judges them with the
// rule's own code.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analysis/analysis_results.h"
#include "core/ip_addr.h"
#include "diagnosis/finding_kind.h"
#include "diagnosis/rules/rule_context.h"

namespace prism::diagnosis {

struct FabricContribution {
  // Over every record of the window (judged or not): the bins span these starts. A shard with
  // no record of the window contributes INT64_MAX / INT64_MIN (nothing).
  int64_t first_start_ns = INT64_MAX;
  int64_t last_start_ns = INT64_MIN;

  std::vector<std::string> jobs;  // job ids, the contributing window's job order
  std::vector<std::string> leaf_names;
  std::vector<std::string> points;  // observation point names
  // Per endpoint a record below refers to: its address, job (index into jobs; every endpoint of
  // a kept record has one) and leaf (index into leaf_names, -1: unknown).
  std::vector<IpAddr> endpoint_addr;
  std::vector<int32_t> endpoint_job;
  std::vector<int32_t> endpoint_leaf;
  // The window's labelled pairs between those endpoints (a, b: endpoint indices).
  struct LabelledPair {
    uint32_t a = 0, b = 0;
    analysis::PairLabel label = analysis::PairLabel::kUnknown;
    bool operator==(const LabelledPair&) const = default;
  };
  std::vector<LabelledPair> pairs;

  // The records, in the window's order (by start): bytes are the estimated bytes (a sampled
  // record's N times its own), src and dst endpoint indices, point an index into points or
  // kNoPoint.
  std::vector<int64_t> start_ns, end_ns;
  std::vector<uint64_t> bytes;
  std::vector<uint32_t> src, dst, point;

  size_t records() const { return start_ns.size(); }
  // A shard with no record of the window at all (not one whose records the rule skips): what
  // it publishes for a window it passed in a pause of its jobs, so the window is known whole.
  bool empty() const { return first_start_ns == INT64_MAX && start_ns.empty(); }
  bool operator==(const FabricContribution&) const = default;
};

// The bandwidth rule's findings about the fabric (switches, fabric links, access links): judged
// over every job's records, so a shard's own are only its view of the fabric.
inline bool IsFabricFinding(FindingKind kind) {
  return kind == FindingKind::kDegradedSwitch || kind == FindingKind::kCongestedLink ||
         kind == FindingKind::kDegradedLink;
}

// The contribution of the window rc holds: its records the rule reads, in their order.
FabricContribution BuildFabricContribution(const RuleContext& rc);

// The contributions of disjoint sets of jobs (one per shard) as one: names joined, jobs kept
// apart (a job is on one shard; the same id on two shards — a job being moved — stays two jobs,
// and an endpoint seen in both keeps the first one's), records merged by start (stable: a tie
// keeps the order of `parts`).
FabricContribution MergeFabricContributions(std::span<const FabricContribution> parts);

}  // namespace prism::diagnosis
