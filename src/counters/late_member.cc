#include "counters/late_member.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace prism::counters {
namespace {

using DeltaPick = std::function<bool(const PhaseDelta&)>;

bool Any(const PhaseDelta&) { return true; }

// What is folded for one member: its NICs' deltas, the bins to look back over, and where its
// collective's burst sits (episode and normal). The burst is located once on all its NICs
// together: one NIC's fold is noisier and may put its busiest bin elsewhere.
struct Look {
  size_t lead_episode = 0, lead_normal = 0;
  size_t peak_episode = 0, peak_normal = 0;
};

std::vector<PhaseDelta> Pick(const std::vector<const NicPhaseDeltas*>& nics, bool sent,
                             bool normal, const DeltaPick& pick) {
  std::vector<PhaseDelta> out;
  for (const NicPhaseDeltas* n : nics) {
    const std::vector<PhaseDelta>& v = normal ? (sent ? n->normal_sent : n->normal_received)
                                              : (sent ? n->sent : n->received);
    for (const PhaseDelta& d : v)
      if (pick(d)) out.push_back(d);
  }
  return out;
}

// The early share of the episode rows passing `pick` minus that of the normal rows, before the
// bursts `look` names; NaN when either has too few deltas to fold (never "quiet").
double ExcessEarlyShare(const std::vector<const NicPhaseDeltas*>& nics, bool sent,
                        const DeltaPick& pick, const Look& look, const LateMemberOptions& o) {
  const std::vector<double> e = FoldByPhase(Pick(nics, sent, false, pick), o.bins);
  const std::vector<double> b = FoldByPhase(Pick(nics, sent, true, Any), o.bins);
  if (e.empty() || b.empty()) return std::nan("");
  return EarlyShareBefore(e, look.peak_episode, look.lead_episode, o.margin_bins) -
         EarlyShareBefore(b, look.peak_normal, look.lead_normal, o.margin_bins);
}

std::vector<const NicPhaseDeltas*> AllNics(const MemberPhaseDeltas& m) {
  std::vector<const NicPhaseDeltas*> v;
  for (const NicPhaseDeltas& n : m.nics) v.push_back(&n);
  return v;
}

// A member's excess early shares on all its NICs, with where its bursts are (per direction).
struct MemberFold {
  double sent = 0, received = 0;
  Look look_sent, look_received;
};

MemberFold FoldMember(const MemberPhaseDeltas& m, size_t lead_episode, size_t lead_normal,
                      const LateMemberOptions& o) {
  MemberFold f;
  const std::vector<const NicPhaseDeltas*> nics = AllNics(m);
  for (bool sent : {true, false}) {
    Look& look = sent ? f.look_sent : f.look_received;
    look.lead_episode = lead_episode;
    look.lead_normal = lead_normal;
    const std::vector<double> e = FoldByPhase(Pick(nics, sent, false, Any), o.bins);
    const std::vector<double> b = FoldByPhase(Pick(nics, sent, true, Any), o.bins);
    double& share = sent ? f.sent : f.received;
    if (e.empty() || b.empty()) {
      share = std::nan("");
      continue;
    }
    look.peak_episode = BusiestPair(e);
    look.peak_normal = BusiestPair(b);
    share = EarlyShareBefore(e, look.peak_episode, lead_episode, o.margin_bins) -
            EarlyShareBefore(b, look.peak_normal, lead_normal, o.margin_bins);
  }
  return f;
}

// Whether `nics` stay below the threshold in both directions for the rows `pick` keeps.
bool QuietBothWays(const std::vector<const NicPhaseDeltas*>& nics, const DeltaPick& pick,
                   const MemberFold& f, double threshold, const LateMemberOptions& o) {
  return ExcessEarlyShare(nics, true, pick, f.look_sent, o) < threshold &&
         ExcessEarlyShare(nics, false, pick, f.look_received, o) < threshold;
}

// Whether one NIC's own episode fold puts its collective's burst where its server's is (within
// the margin, each direction). One NIC's fold is underdetermined where its polls cover the
// iteration thinly, and a port whose refresh lattice was misjudged is read at the wrong times:
// such a NIC's timing cannot confirm anything.
bool TimedLikeItsServer(const NicPhaseDeltas& n, const MemberFold& f, const LateMemberOptions& o) {
  for (bool sent : {true, false}) {
    const std::vector<double> e = FoldByPhase(Pick({&n}, sent, false, Any), o.bins);
    if (e.empty()) return false;
    const size_t peak = BusiestPair(e), want = (sent ? f.look_sent : f.look_received).peak_episode;
    const size_t d = peak > want ? peak - want : want - peak;
    if (std::min(d, o.bins - d) > o.margin_bins) return false;
  }
  return true;
}

// A candidate is confirmed in each half of the episode (persistent, not one stretch of noise) and
// on at least two thirds of its NICs with a real share of its bytes and usable timing, at least
// two: each is polled and refreshed on its own, so their artefacts differ, and one NIC cannot
// confirm itself. One NIC's fold is noisier (held to twice the threshold), and a port whose
// refresh lattice was misjudged over part of the span reads some bursts a refresh early: that
// one NIC may disagree.
bool Confirmed(const MemberPhaseDeltas& m, const MemberFold& f, size_t iterations,
               double threshold, const LateMemberOptions& o) {
  const double mid = static_cast<double>(iterations) / 2;
  const auto first = [mid](const PhaseDelta& d) { return d.to <= mid; };
  const auto second = [mid](const PhaseDelta& d) { return d.from >= mid; };
  const std::vector<const NicPhaseDeltas*> all = AllNics(m);
  if (!QuietBothWays(all, first, f, threshold, o) || !QuietBothWays(all, second, f, threshold, o))
    return false;
  size_t asked = 0, quiet = 0;
  for (const NicPhaseDeltas& n : m.nics) {
    if (n.share < o.min_nic_share || !TimedLikeItsServer(n, f, o)) continue;
    ++asked;
    quiet += QuietBothWays({&n}, Any, f, 2 * threshold, o) ? 1 : 0;
  }
  return quiet >= 2 && quiet * 3 >= asked * 2;
}

}  // namespace

LateMembers FindLateMembers(const std::vector<MemberPhaseDeltas>& members,
                            size_t episode_iterations, size_t lead_bins_episode,
                            size_t lead_bins_normal, const LateMemberOptions& options) {
  LateMembers out;
  out.members.resize(members.size());
  if (members.size() < 3 || lead_bins_episode <= options.margin_bins) return out;
  std::vector<MemberFold> folds;
  double top_sent = 0, top_received = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    folds.push_back(FoldMember(members[i], lead_bins_episode, lead_bins_normal, options));
    MemberOnset& m = out.members[i];
    m.early_sent = folds.back().sent;
    m.early_received = folds.back().received;
    if (std::isnan(m.early_sent) || std::isnan(m.early_received)) return out;  // cannot judge
    top_sent = std::max(top_sent, m.early_sent);
    top_received = std::max(top_received, m.early_received);
  }
  out.evidence = top_sent >= options.min_early && top_received >= options.min_early;
  out.threshold = options.late_fraction * std::min(top_sent, top_received);
  if (!out.evidence) return out;
  std::vector<size_t> late;
  for (size_t i = 0; i < members.size(); ++i) {
    const MemberOnset& m = out.members[i];
    if (std::max(m.early_sent, m.early_received) >= out.threshold) continue;
    if (Confirmed(members[i], folds[i], episode_iterations, out.threshold, options))
      late.push_back(i);
  }
  if (late.empty() || late.size() * 3 > members.size()) return out;
  for (size_t i : late) out.members[i].late = true;
  out.late = std::move(late);
  return out;
}

}  // namespace prism::counters
