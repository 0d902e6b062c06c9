#include "counters/late_servers.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "counters/late_member.h"
#include "counters/refresh_phase.h"

namespace prism::counters {
namespace {

using diagnosis::FindingKind;

// A contiguous run of iterations [first, last] and its clock.
struct Span {
  size_t first = 0, last = 0;
};

IterationClock ClockOf(const CountersJob& job, const Span& s) {
  std::vector<double> b;
  for (size_t k = s.first; k <= s.last; ++k)
    b.push_back(static_cast<double>(job.iterations[k].start_ms));
  b.push_back(static_cast<double>(job.iterations[s.last].end_ms));
  return IterationClock(std::move(b));
}

// Normal iterations next to the episode, as many as it has (at least `min`): the nearest run of
// iterations neither flagged nor gaps, before the episode, else after it.
bool NormalSpan(const CountersJob& job, const std::vector<bool>& flagged, const Span& episode,
                size_t min, Span* out) {
  const size_t want = std::max(min, episode.last - episode.first + 1);
  auto ok = [&](size_t k) { return !flagged[k] && !job.iterations[k].gap; };
  size_t e = episode.first;
  while (e > 0 && !ok(e - 1)) --e;  // skip the episode's flagged neighbours
  size_t b = e;
  while (b > 0 && ok(b - 1) && e - b < want) --b;
  if (e - b >= min) {
    *out = {b, e - 1};
    return true;
  }
  b = episode.last + 1;
  while (b < job.iterations.size() && !ok(b)) ++b;
  e = b;
  while (e < job.iterations.size() && ok(e) && e - b < want) ++e;
  if (e - b < min) return false;
  *out = {b, e - 1};
  return true;
}

// One port's deltas in phase units over `clock`, per direction. The values a poll read were taken
// at the port's refresh lattice when it explains the zeros (then every delta spans exactly
// between two refreshes); otherwise a delta is spread as the resampler does (resample.h).
void PortPhaseDeltas(const PortSeries& p, const RefreshLattice& lattice,
                     const IterationClock& clock, const LateServerContext& c,
                     std::vector<PhaseDelta>* sent, std::vector<PhaseDelta>* received,
                     double* bytes) {
  const size_t n = p.ts_ms.size();
  const bool use_lattice = lattice.refresh_ms > 0 && lattice.fit >= 0.9;
  const double refresh_ms = c.refresh_s * 1000, max_gap_ms = c.max_gap_s * 1000;
  double last_nonzero = static_cast<double>(n ? p.ts_ms[0] : 0);
  for (size_t i = 1; i < n; ++i) {
    const double t = static_cast<double>(p.ts_ms[i]), prev = static_cast<double>(p.ts_ms[i - 1]);
    const bool nonzero = p.in_bytes[i] + p.out_bytes[i] > 0;
    double a = std::max(last_nonzero, t - std::max(refresh_ms, t - prev)), b = t;
    if (use_lattice) {
      a = ReadInstantMs(lattice, p.ts_ms[i - 1]);
      b = ReadInstantMs(lattice, p.ts_ms[i]);
    }
    if (nonzero) last_nonzero = t;
    if (!nonzero || b <= a || t - prev > max_gap_ms) continue;
    const double pa = clock.PhaseAt(a), pb = clock.PhaseAt(b);
    if (std::isnan(pa) || std::isnan(pb)) continue;
    if (p.in_bytes[i] > 0) sent->push_back({pa, pb, static_cast<double>(p.in_bytes[i])});
    if (p.out_bytes[i] > 0) received->push_back({pa, pb, static_cast<double>(p.out_bytes[i])});
    *bytes += static_cast<double>(p.in_bytes[i] + p.out_bytes[i]);
  }
}

// The port's refresh lattice over [from_ms, to_ms] (the spans being folded: a lattice found
// there need not hold over hours).
RefreshLattice PortLattice(const PortSeries& p, double refresh_s, int64_t from_ms, int64_t to_ms) {
  std::vector<bool> nonzero(p.ts_ms.size());
  for (size_t i = 0; i < nonzero.size(); ++i) nonzero[i] = p.in_bytes[i] + p.out_bytes[i] > 0;
  return EstimateRefreshLattice(p.ts_ms, nonzero, refresh_s, from_ms, to_ms);
}

// Every NIC's phase deltas of one server, over the episode and the normal span.
MemberPhaseDeltas MemberDeltas(const std::vector<std::pair<const PortSeries*, std::string>>& ports,
                               const IterationClock& episode, const IterationClock& normal,
                               const LateServerContext& c) {
  MemberPhaseDeltas m;
  double total = 0;
  std::vector<double> nic_bytes;
  const int64_t from_ms = static_cast<int64_t>(std::min(episode.start_ms(), normal.start_ms()));
  const int64_t to_ms = static_cast<int64_t>(std::max(episode.end_ms(), normal.end_ms()));
  for (const auto& [port, nic] : ports) {
    NicPhaseDeltas d;
    double bytes = 0, unused = 0;
    const RefreshLattice lattice = PortLattice(*port, c.refresh_s, from_ms, to_ms);
    PortPhaseDeltas(*port, lattice, episode, c, &d.sent, &d.received, &bytes);
    PortPhaseDeltas(*port, lattice, normal, c, &d.normal_sent, &d.normal_received, &unused);
    total += bytes;
    nic_bytes.push_back(bytes);
    m.nics.push_back(std::move(d));
  }
  for (size_t i = 0; i < m.nics.size(); ++i) m.nics[i].share = total > 0 ? nic_bytes[i] / total : 0;
  return m;
}

}  // namespace

namespace {

// The finding naming the late members of one episode, with the episode's severity and loss.
CountersFinding LateFinding(const CountersJob& job, int ji, const CountersFinding& episode,
                            const LateMembers& late, size_t iterations,
                            const std::vector<ServerResult>& servers) {
  CountersFinding f;
  f.kind = FindingKind::kServerOutOfStep;
  f.severity = episode.severity;
  f.lost_gpu_s = episode.lost_gpu_s;
  f.job = ji;
  f.start_ms = episode.start_ms;
  f.end_ms = episode.end_ms;
  f.metric = "early_share";  // share of its bytes a member moved before its collective began
  std::vector<std::string> names;
  for (size_t i : late.late) {
    f.servers.push_back(job.servers[i]);
    names.push_back(servers[job.servers[i]].name);
    const MemberOnset& m = late.members[i];
    f.value = std::max(f.value, std::max(m.early_sent, m.early_received));
  }
  double top_sent = 0, top_received = 0;
  for (const MemberOnset& m : late.members) {
    top_sent = std::max(top_sent, m.early_sent);
    top_received = std::max(top_received, m.early_received);
  }
  f.baseline = std::min(top_sent, top_received);
  f.sigma = late.threshold;
  f.units = static_cast<int>(iterations);
  f.summary = fmt::format(
      "{} reached the job's collectives last over {} slow iterations: neither sent nor received "
      "before the ring's burst (at most {:.1f}% of the bytes, above normal iterations) while other "
      "members sent up to {:.1f}% and received up to {:.1f}% early, in both halves of the episode "
      "and on most NICs; the job lost {:.0f} GPU-s{}",
      fmt::join(names, ", "), iterations, 100 * std::max(0.0, f.value), 100 * top_sent,
      100 * top_received, episode.lost_gpu_s,
      names.size() > 1 ? " (a slow server also holds back the other stages of its pipeline "
                         "replica, which then arrive last at their own rings)"
                       : "");
  return f;
}

}  // namespace

void FindLateServers(const CountersJob& job, int ji, const std::vector<ServerResult>& servers,
                     const std::vector<bool>& flagged, const LateServerContext& context,
                     const ServerPortsFn& server_ports, std::vector<CountersFinding>* findings) {
  if (job.servers.size() < 3 || context.step_median_s <= 0) return;
  std::vector<CountersFinding> episodes;
  for (const CountersFinding& f : *findings)
    if (f.job == ji && f.kind == FindingKind::kSlowIteration) episodes.push_back(f);
  const LateMemberOptions options;
  for (const CountersFinding& ep : episodes) {
    Span e{job.iterations.size(), 0};
    for (size_t k = 0; k < job.iterations.size(); ++k) {
      const Iteration& it = job.iterations[k];
      if (it.start_ms < ep.start_ms || it.end_ms > ep.end_ms) continue;
      e.first = std::min(e.first, k);
      e.last = std::max(e.last, k);
    }
    Span normal;
    if (e.first > e.last || e.last - e.first + 1 < context.min_iterations ||
        !NormalSpan(job, flagged, e, context.min_iterations, &normal))
      continue;
    const size_t count = e.last - e.first + 1;
    // Members that arrive early wait for the late one about as long as each iteration lost.
    const double episode_step_s = (ep.end_ms - ep.start_ms) / 1000.0 / count;
    const double lead_s = 1.5 * (episode_step_s - context.step_median_s);
    if (lead_s <= 0) continue;
    const size_t lead_e = static_cast<size_t>(lead_s / episode_step_s * options.bins);
    const size_t lead_n = static_cast<size_t>(lead_s / context.step_median_s * options.bins);
    const IterationClock ec = ClockOf(job, e), nc = ClockOf(job, normal);
    std::vector<MemberPhaseDeltas> members;
    for (int s : job.servers)
      members.push_back(MemberDeltas(server_ports(servers[s].name), ec, nc, context));
    const LateMembers late = FindLateMembers(members, count, lead_e, std::min(lead_n,
                                             options.bins - 1), options);
    if (!late.late.empty())
      findings->push_back(LateFinding(job, ji, ep, late, count, servers));
  }
}

}  // namespace prism::counters
