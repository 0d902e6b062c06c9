// File: counters/late_member.h
// Counters mode: which server a slow job waits for, from when each server's collective traffic
// begins. NCCL rings make progress before every member has arrived: a member whose successor has
// posted its buffers sends its own chunk, the successor passes it on, and so on until the chain
// reaches a member not there yet. While a job waits for one late member, the others therefore
// send or receive part of their collective early, the member after the late one sends without
// receiving, its predecessor receives without sending, and only the late member does neither.
// With 1 s polls those early bytes (tens of ms, a second or two before the burst) are invisible in
// any one iteration; folded by phase over an episode of slow iterations (counters/phase_fold.h)
// they show as each server's share of bytes moved before its collective's burst, per direction.
// A server is late when that share, above what it is in normal iterations, stays near zero in
// both directions while the job's members show clear early shares in both, in each half of the
// episode and on each of its NICs. Sits after counters/slow_episodes.h (the episodes), before the
// analysis' findings.
#pragma once

#include <cstddef>
#include <vector>

#include "counters/phase_fold.h"

namespace prism::counters {

// One NIC's deltas folded by phase: over the episode (phase 0 = its first iteration) and over
// normal iterations of the same job.
struct NicPhaseDeltas {
  double share = 0;  // of its server's bytes in the episode
  std::vector<PhaseDelta> sent, received;
  std::vector<PhaseDelta> normal_sent, normal_received;
};
struct MemberPhaseDeltas {
  std::vector<NicPhaseDeltas> nics;
};

struct LateMemberOptions {
  size_t bins = 60;             // phase bins of one iteration
  size_t margin_bins = 3;       // bins before the burst left out (its own blur)
  double min_early = 0.05;      // the job's earliest members' share, each direction, to judge
  double late_fraction = 0.15;  // a late member's share is below this fraction of theirs
  double min_nic_share = 0.1;   // NICs carrying less are not asked to agree
};

struct MemberOnset {
  // Share of the member's bytes moved before its collective's burst, episode minus normal.
  double early_sent = 0, early_received = 0;
  bool late = false;
};

struct LateMembers {
  std::vector<MemberOnset> members;
  double threshold = 0;   // both shares below it: late
  bool evidence = false;  // the job's members moved bytes early in both directions
  std::vector<size_t> late;
};

// `lead_bins`: how far before the burst early bytes are sought, in episode bins (the time lost
// per slow iteration: how long the others waited) and in normal-iteration bins (the same time).
// `episode_iterations` splits the episode into halves. No member is late when more than a third
// would be (a job-wide slowdown has no late member) or without evidence.
LateMembers FindLateMembers(const std::vector<MemberPhaseDeltas>& members,
                            size_t episode_iterations, size_t lead_bins_episode,
                            size_t lead_bins_normal, const LateMemberOptions& options);

}  // namespace prism::counters
