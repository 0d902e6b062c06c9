#include "output/report_views.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace prism::output {
namespace {

// At most this many GPUs named in findings are added to a sampled selection, per job.
constexpr size_t kMaxFindingGpus = 16;

std::map<IpAddr, const ReportTimeline*> TimelinesOf(const Report& report, const ReportJob& job) {
  std::map<IpAddr, const ReportTimeline*> out;
  for (const ReportTimeline& t : report.timelines) {
    if (t.job == job.id) out[t.gpu] = &t;
  }
  return out;
}

// The peer this GPU sends to most often in direction `forward` (absent when it sends none).
std::optional<IpAddr> MainPeer(const ReportTimeline& t, bool forward) {
  std::map<IpAddr, size_t> counts;
  for (const ReportStep& s : t.steps) {
    for (const ReportPpEvent& e : s.pp_events) {
      if (e.outgoing && e.forward == forward) ++counts[e.peer];
    }
  }
  std::optional<IpAddr> best;
  size_t best_n = 0;
  for (const auto& [peer, n] : counts) {
    if (n > best_n) best = peer, best_n = n;
  }
  return best;
}

// The pipeline replica through `gpu`: backwards along gradient sends, then forwards along
// activation sends. Bounded by the number of timelines (a malformed cycle cannot loop).
std::vector<IpAddr> ReplicaThrough(const std::map<IpAddr, const ReportTimeline*>& tl, IpAddr gpu) {
  std::vector<IpAddr> chain{gpu};
  std::set<IpAddr> seen{gpu};
  for (IpAddr cur = gpu;;) {
    auto it = tl.find(cur);
    if (it == tl.end()) break;
    auto prev = MainPeer(*it->second, /*forward=*/false);
    if (!prev || !seen.insert(*prev).second || !tl.count(*prev)) break;
    chain.insert(chain.begin(), *prev);
    cur = *prev;
  }
  for (IpAddr cur = gpu;;) {
    auto it = tl.find(cur);
    if (it == tl.end()) break;
    auto next = MainPeer(*it->second, /*forward=*/true);
    if (!next || !seen.insert(*next).second || !tl.count(*next)) break;
    chain.push_back(*next);
    cur = *next;
  }
  return chain;
}

}  // namespace

std::vector<JobStepPoint> JobStepSeries(const Report& report, const ReportJob& job) {
  struct S {
    int64_t start_ns;
    double dur_s;
  };
  std::vector<S> all;
  for (const ReportTimeline& t : report.timelines) {
    if (t.job != job.id) continue;
    for (const ReportStep& s : t.steps) {
      all.push_back({s.start_ns, static_cast<double>(s.end_ns - s.start_ns) / 1e9});
    }
  }
  std::vector<JobStepPoint> out;
  if (all.empty()) return out;
  std::sort(all.begin(), all.end(), [](const S& a, const S& b) { return a.start_ns < b.start_ns; });
  std::vector<double> durs;
  for (const S& s : all) durs.push_back(s.dur_s);
  const int64_t half_ns = std::llround(Quantile(durs, 0.5) * 1e9 / 2);
  size_t i = 0;
  while (i < all.size()) {
    size_t j = i;
    std::vector<double> group;
    while (j < all.size() && all[j].start_ns - all[i].start_ns < half_ns) group.push_back(all[j++].dur_s);
    if (j == i) group.push_back(all[j++].dur_s);  // zero-length median step: one per group
    JobStepPoint p;
    p.start_ns = all[i].start_ns;
    p.median_s = Quantile(group, 0.5);
    p.max_s = *std::max_element(group.begin(), group.end());
    p.gpus = group.size();
    out.push_back(p);
    i = j;
  }
  return out;
}

StepTrend ComputeStepTrend(const std::vector<JobStepPoint>& series) {
  StepTrend t;
  const size_t n = series.size();
  if (n < 6) return t;
  double mx = 0, my = 0;
  std::vector<double> ys;
  for (const auto& p : series) {
    mx += static_cast<double>(p.start_ns - series[0].start_ns) / 60e9;
    my += p.median_s;
    ys.push_back(p.median_s);
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (const auto& p : series) {
    double x = static_cast<double>(p.start_ns - series[0].start_ns) / 60e9 - mx;
    sxy += x * (p.median_s - my);
    sxx += x * x;
  }
  const double median = Quantile(ys, 0.5);
  if (sxx > 0 && median > 0) t.slope_pct_per_min = sxy / sxx / median * 100;
  const size_t third = n / 3;
  t.first_s = Quantile(std::vector<double>(ys.begin(), ys.begin() + static_cast<ptrdiff_t>(third)), 0.5);
  t.last_s = Quantile(std::vector<double>(ys.end() - static_cast<ptrdiff_t>(third), ys.end()), 0.5);
  t.known = true;
  return t;
}

const char* SegmentKindName(SegmentKind kind) {
  switch (kind) {
    case SegmentKind::kCompute: return "compute";
    case SegmentKind::kPpForward: return "PP forward";
    case SegmentKind::kPpBackward: return "PP backward";
    case SegmentKind::kDp: return "DP";
    case SegmentKind::kBubble: return "bubble";
  }
  return "?";
}

std::vector<StepSegment> StepSegments(const ReportStep& step) {
  const int64_t s0 = step.start_ns, s1 = std::max(step.end_ns, step.start_ns);
  const bool has_dp = step.dp_end_ns > step.dp_start_ns;
  const int64_t dp0 = has_dp ? std::clamp(step.dp_start_ns, s0, s1) : s1;
  const int64_t dp1 = has_dp ? std::clamp(step.dp_end_ns, s0, s1) : s1;
  // Boundaries: step, DP phase and every PP event, clipped to the step.
  std::vector<int64_t> cuts{s0, s1, dp0, dp1};
  for (const ReportPpEvent& e : step.pp_events) {
    cuts.push_back(std::clamp(e.start_ns, s0, s1));
    cuts.push_back(std::clamp(e.end_ns, s0, s1));
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

  // Elementary intervals, then merge. Idle intervals are classified after merging, by what
  // starts at their end.
  constexpr int kIdle = -1;
  std::vector<StepSegment> raw;
  std::vector<int> kinds;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const int64_t a = cuts[i], b = cuts[i + 1];
    int kind = kIdle;
    if (a >= dp0 && b <= dp1 && dp1 > dp0) {
      kind = static_cast<int>(SegmentKind::kDp);
    } else {
      bool fwd = false, bwd = false;
      for (const ReportPpEvent& e : step.pp_events) {
        if (e.start_ns <= a && e.end_ns >= b && e.end_ns > e.start_ns) (e.forward ? fwd : bwd) = true;
      }
      if (fwd) kind = static_cast<int>(SegmentKind::kPpForward);
      else if (bwd) kind = static_cast<int>(SegmentKind::kPpBackward);
    }
    if (!kinds.empty() && kinds.back() == kind) {
      raw.back().end_ns = b;
    } else {
      raw.push_back({SegmentKind::kBubble, a, b});
      kinds.push_back(kind);
    }
  }
  for (size_t i = 0; i < raw.size(); ++i) {
    if (kinds[i] != kIdle) {
      raw[i].kind = static_cast<SegmentKind>(kinds[i]);
      continue;
    }
    // Compute when this GPU starts sending where the gap ends (or the DP phase follows: the
    // gradient sync waits for the last backward compute).
    const int64_t end = raw[i].end_ns;
    bool sends = end == dp0 && has_dp;
    for (const ReportPpEvent& e : step.pp_events) {
      if (e.outgoing && e.start_ns == end) sends = true;
    }
    raw[i].kind = sends ? SegmentKind::kCompute : SegmentKind::kBubble;
  }
  // Merge neighbours that ended up with the same kind.
  std::vector<StepSegment> out;
  for (const StepSegment& s : raw) {
    if (s.end_ns <= s.start_ns) continue;
    if (!out.empty() && out.back().kind == s.kind && out.back().end_ns == s.start_ns) {
      out.back().end_ns = s.end_ns;
    } else {
      out.push_back(s);
    }
  }
  return out;
}

GpuSelection SelectTimelineGpus(const Report& report, const ReportJob& job, size_t max_all) {
  GpuSelection sel;
  auto tl = TimelinesOf(report, job);
  sel.total = tl.size();
  std::map<IpAddr, std::string> why;
  if (tl.size() <= max_all) {
    for (const auto& [gpu, t] : tl) why[gpu] = "all";
  } else {
    sel.sampled = true;
    IpAddr first = tl.begin()->first;
    if (!job.layout.stages.empty()) {
      for (const IpAddr& g : job.layout.stages[0]) {
        if (tl.count(g)) {
          first = g;
          break;
        }
      }
    }
    for (const IpAddr& g : ReplicaThrough(tl, first)) why[g] = "pipeline replica";
    // GPUs of the most severe findings first: info-level symptoms (a slow DP group names a whole
    // ring) must not crowd out the GPU an alert is about.
    std::vector<const ReportFinding*> findings;
    for (const ReportFinding& f : report.findings)
      if (f.job == job.id) findings.push_back(&f);
    // Severity is ordered info < warning < critical: most severe first.
    std::stable_sort(findings.begin(), findings.end(),
                     [](const ReportFinding* a, const ReportFinding* b) {
                       return a->severity > b->severity;
                     });
    std::vector<IpAddr> named;
    for (const ReportFinding* fp : findings) {
      const ReportFinding& f = *fp;
      for (const IpAddr& g : f.gpus) {
        if (tl.count(g) && std::find(named.begin(), named.end(), g) == named.end()) named.push_back(g);
      }
    }
    if (named.size() > kMaxFindingGpus) named.resize(kMaxFindingGpus);
    if (!named.empty()) {
      for (const IpAddr& g : ReplicaThrough(tl, named.front())) {
        if (!why.count(g)) why[g] = "replica of a finding's GPU";
      }
    }
    for (const IpAddr& g : named) why[g] = "finding";
  }
  for (const auto& [gpu, reason] : why) sel.gpus.push_back({gpu, tl.at(gpu)->stage, reason});
  std::stable_sort(sel.gpus.begin(), sel.gpus.end(),
                   [](const SelectedGpu& a, const SelectedGpu& b) { return a.stage < b.stage; });
  return sel;
}

}  // namespace prism::output
