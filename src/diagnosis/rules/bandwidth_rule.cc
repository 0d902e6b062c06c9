#include "diagnosis/rules/bandwidth_rule.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/jobs/job_recognition.h"
#include "analysis/pair_key_map.h"
#include "diagnosis/robust_stats.h"
#include "diagnosis/rules/bandwidth_cells.h"

namespace prism::diagnosis {
namespace {

constexpr double kMinSigmaFraction = 0.05;

// Per element and bin: degraded or not, with the figures of the worse kind (DP or PP) as the
// finding's evidence.
struct Degradation {
  std::vector<std::vector<bool>> degraded;
  std::vector<std::vector<double>> typical, baseline, sigma;
};

// One kind's judgement of every element in every bin: against its peers of the same element kind
// in that bin (k sigma below their median, and at least the minimum drop below it).
struct KindJudgement {
  std::vector<std::vector<double>> typical, baseline, sigma;
  std::vector<std::vector<bool>> below_peers;
};

KindJudgement JudgeAgainstPeers(const CellGrid& grid, int kind, const DiagnosisOptions& o) {
  const size_t n = grid.elements.size();
  const size_t bins = size_t(grid.bins);
  KindJudgement j{std::vector<std::vector<double>>(n, std::vector<double>(bins, 0)),
                  std::vector<std::vector<double>>(n, std::vector<double>(bins, 1)),
                  std::vector<std::vector<double>>(n, std::vector<double>(bins, 0)),
                  std::vector<std::vector<bool>>(n, std::vector<bool>(bins, false))};
  for (size_t bin = 0; bin < bins; ++bin) {
    for (ElementKind ek : {ElementKind::kSwitch, ElementKind::kFabricLink, ElementKind::kAccessLink}) {
      std::vector<double> typicals;
      std::vector<size_t> ids;
      for (size_t e = 0; e < n; ++e) {
        if (grid.elements[e].kind != ek) continue;
        const Cell* c = grid.Find(e, int64_t(bin), kind);
        if (c == nullptr || c->flows < kMinFlowsPerCell) continue;
        j.typical[e][bin] = c->typical;
        typicals.push_back(c->typical);
        ids.push_back(e);
      }
      if (typicals.size() < 3) continue;
      const double base = Median(typicals);
      const double sigma = std::max(RobustSigma(typicals, base), kMinSigmaFraction * base);
      for (size_t e : ids) {
        j.baseline[e][bin] = base;
        j.sigma[e][bin] = sigma;
        j.below_peers[e][bin] =
            j.typical[e][bin] < base - o.k * sigma && j.typical[e][bin] < base * (1 - o.min_bw_drop);
      }
    }
  }
  return j;
}

// Hash collisions make some links slow all the time; that is the fabric's normal, not a fault.
// So a degraded bin must also have dropped against the element's own better times (its 75th
// percentile bin). An element degraded through the whole window is left to the service, which
// carries history across windows. More traffic through the element than usual also slows its
// flows: that is contention, not lost capacity. So the drop is judged after crediting the bin
// with its extra offered load (bytes through the element relative to its median bin).
Degradation JudgeBins(const CellGrid& grid, const DiagnosisOptions& o) {
  const size_t n = grid.elements.size();
  const size_t bins = size_t(grid.bins);
  Degradation d{std::vector<std::vector<bool>>(n, std::vector<bool>(bins, false)),
                std::vector<std::vector<double>>(n, std::vector<double>(bins, 0)),
                std::vector<std::vector<double>>(n, std::vector<double>(bins, 1)),
                std::vector<std::vector<double>>(n, std::vector<double>(bins, 0))};
  for (int kind : {0, 1}) {
    const KindJudgement j = JudgeAgainstPeers(grid, kind, o);
    for (size_t e = 0; e < n; ++e) {
      std::vector<double> own, load;
      for (size_t bin = 0; bin < bins; ++bin) {
        if (j.typical[e][bin] <= 0) continue;
        own.push_back(j.typical[e][bin]);
        load.push_back(grid.Find(e, int64_t(bin), kind)->bytes);  // typical > 0: it has records
      }
      if (own.size() < 3) continue;
      const double typical_load = Median(load);
      std::sort(own.begin(), own.end());
      const double ref = own[own.size() * 3 / 4];
      for (size_t bin = 0; bin < bins; ++bin) {
        if (!j.below_peers[e][bin]) continue;
        const Cell* c = grid.Find(e, int64_t(bin), kind);
        const double extra_load = std::max(1.0, (c != nullptr ? c->bytes : 0.0) / typical_load);
        if (j.typical[e][bin] * extra_load > ref * (1 - o.min_bw_drop)) continue;
        // Keep the worse kind's figures as the finding's evidence.
        if (!d.degraded[e][bin] ||
            j.typical[e][bin] / j.baseline[e][bin] < d.typical[e][bin] / d.baseline[e][bin]) {
          d.typical[e][bin] = j.typical[e][bin];
          d.baseline[e][bin] = j.baseline[e][bin];
          d.sigma[e][bin] = j.sigma[e][bin];
        }
        d.degraded[e][bin] = true;
      }
    }
  }
  return d;
}

// The records below the drop threshold that crossed element `e` in `bin`, both kinds, sorted.
std::vector<uint32_t> SlowRows(const CellGrid& grid, size_t e, size_t bin) {
  std::vector<uint32_t> rows;
  for (int kind : {0, 1})
    if (const Cell* c = grid.Find(e, int64_t(bin), kind))
      rows.insert(rows.end(), c->slow.begin(), c->slow.end());
  std::sort(rows.begin(), rows.end());
  return rows;
}

// Per element, the bins where it is degraded and nothing else explains it: a degraded link is
// explained by a degraded switch at one of its ends in the same bin; and as a flow crosses two
// links, when one is the bottleneck the other sees the same slow flows: a degraded link whose
// slow flows mostly (two thirds) also cross a worse degraded link on the same spine in the same
// bin is explained by that link (ties: the first name wins).
std::vector<std::vector<bool>> Unexplained(const CellGrid& grid, const Degradation& d) {
  auto switch_degraded = [&](const std::string& name, size_t bin) {
    const long i = grid.IndexOf(name);
    return i >= 0 && d.degraded[size_t(i)][bin];
  };
  auto explained_by_link = [&](size_t e, size_t bin) {
    const Element& el = grid.elements[e];
    const std::vector<uint32_t> mine = SlowRows(grid, e, bin);
    if (mine.empty()) return false;
    for (size_t other = 0; other < grid.elements.size(); ++other) {
      const Element& ol = grid.elements[other];
      if (other == e || ol.kind != ElementKind::kFabricLink || ol.b != el.b || !d.degraded[other][bin])
        continue;
      const double worse = d.typical[other][bin] / d.baseline[other][bin];
      const double self = d.typical[e][bin] / d.baseline[e][bin];
      if (worse > self || (worse == self && ol.name > el.name)) continue;
      const std::vector<uint32_t> theirs = SlowRows(grid, other, bin);
      std::vector<uint32_t> shared;
      std::set_intersection(mine.begin(), mine.end(), theirs.begin(), theirs.end(),
                            std::back_inserter(shared));
      if (shared.size() * 3 >= mine.size() * 2) return true;
    }
    return false;
  };
  std::vector<std::vector<bool>> flags = d.degraded;
  for (size_t e = 0; e < grid.elements.size(); ++e) {
    const Element& el = grid.elements[e];
    if (el.kind != ElementKind::kFabricLink) continue;
    for (size_t bin = 0; bin < size_t(grid.bins); ++bin)
      if (flags[e][bin] && (switch_degraded(el.a, bin) || switch_degraded(el.b, bin) ||
                            explained_by_link(e, bin)))
        flags[e][bin] = false;
  }
  return flags;
}

// Persistent runs of an element's unexplained bins, as findings.
void AddFindings(const CellGrid& grid, const Degradation& d, size_t e, const std::vector<bool>& flags,
                 const DiagnosisOptions& o, NetworkFindings* out) {
  const Element& el = grid.elements[e];
  const bool link = el.kind == ElementKind::kFabricLink;
  for (const Run& run : FlaggedRuns(flags, 1)) {
    Finding fd;
    fd.kind = link ? "congested_link" : "degraded_switch";
    fd.cause = Cause::kNetwork;
    fd.switches = link ? std::vector<std::string>{el.a, el.b} : std::vector<std::string>{el.a};
    fd.start_ns = grid.t0 + int64_t(run.first) * grid.bin_ns;
    fd.end_ns = grid.t0 + int64_t(run.last + 1) * grid.bin_ns;
    fd.metric = "relative_bandwidth";
    std::vector<double> vals, bases;
    std::map<int, size_t> jobs;
    for (size_t bin = run.first; bin <= run.last; ++bin) {
      if (!d.degraded[e][bin]) continue;
      vals.push_back(d.typical[e][bin]);
      bases.push_back(d.baseline[e][bin]);
      fd.sigma = std::max(fd.sigma, d.sigma[e][bin]);
      for (int kind : {0, 1}) {
        if (const Cell* c = grid.Find(e, int64_t(bin), kind))
          for (auto [j, n] : c->jobs) jobs[j] += n;
      }
    }
    fd.value = Median(vals);
    fd.baseline = Median(bases);
    fd.units = static_cast<int>(run.flagged);
    size_t most = 0;
    std::vector<int> affected;
    for (auto [j, n] : jobs) {
      affected.push_back(j);
      if (n > most) most = n, fd.job = j;
    }
    fd.severity = SeverityFor(fd.units, 1 - fd.value / fd.baseline, o);
    fd.summary = fmt::format("{} {}: flows through it run at {:.0f}% of the fabric's median for {} bins of {} s",
                             link ? "link" : "switch", link ? el.a + " - " + el.b : el.a,
                             100 * fd.value / fd.baseline, fd.units, grid.bin_ns / 1'000'000'000);
    out->findings.push_back(std::move(fd));
    out->jobs_affected.push_back(std::move(affected));
  }
}

}  // namespace

NetworkFindings FindNetworkDegradation(const RuleContext& rc) {
  NetworkFindings out;
  if (rc.flows.empty()) return out;
  RecordClasses classes = RecordClasses::Measure(rc);
  const CellGrid grid = BuildCellGrid(rc, classes);
  classes.Release();
  const Degradation d = JudgeBins(grid, rc.options);
  const std::vector<std::vector<bool>> flags = Unexplained(grid, d);
  for (size_t e = 0; e < grid.elements.size(); ++e) AddFindings(grid, d, e, flags[e], rc.options, &out);
  return out;
}

}  // namespace prism::diagnosis


namespace prism::diagnosis {

std::vector<SwitchDpBandwidth> MeasureSwitchDpBandwidth(const flow::FlowTable& f,
                                                        const PointTable& points,
                                                        const analysis::EndpointContext& ctx,
                                                        const analysis::AnalysisResults& results) {
  std::vector<SwitchDpBandwidth> out;
  if (f.empty()) return out;
  analysis::PairKeyMap pair_index;
  std::vector<bool> is_dp;
  for (const auto& p : results.pairs) {
    const uint32_t i = pair_index.FindOrInsert(analysis::PairKey(p.a, p.b));
    if (i == is_dp.size()) is_dp.push_back(false);
    is_dp[i] = p.label == analysis::PairLabel::kDp;
  }
  const auto src = f.src(), dst = f.dst();
  const auto start = f.start_ns(), end = f.end_ns();
  const auto bytes = f.bytes();
  const auto point = f.point();
  // Pass 1: the DP data records and their bandwidth; the median per job.
  std::vector<std::pair<size_t, double>> dp;  // (row, bytes per second)
  std::vector<std::vector<double>> job_bw(results.jobs.size());
  for (size_t r = 0; r < f.size(); ++r) {
    if (bytes[r] <= kBandwidthControlMaxBytes) continue;
    const int job = results.job_of[src[r]];
    if (job < 0 || job != results.job_of[dst[r]]) continue;
    const uint32_t pi = pair_index.Find(analysis::PairKey(src[r], dst[r]));
    if (pi == analysis::PairKeyMap::kNone || !is_dp[pi]) continue;
    const double bw =
        double(bytes[r]) * 1e9 / double(std::max<int64_t>(1000, end[r] - start[r]));
    dp.push_back({r, bw});
    job_bw[size_t(job)].push_back(bw);
  }
  std::vector<double> job_median(job_bw.size(), 0);
  for (size_t j = 0; j < job_bw.size(); ++j)
    if (!job_bw[j].empty()) job_median[j] = Median(std::move(job_bw[j]));
  // Pass 2: per switch crossed.
  struct Acc {
    std::vector<double> bw, rel;
  };
  std::map<std::string, Acc> acc;
  for (const auto& [r, bw] : dp) {
    const double rel = bw / job_median[size_t(results.job_of[src[r]])];
    std::set<std::string> crossed;
    if (point[r] != kNoPoint) crossed.insert(points.Name(point[r]));
    for (int leaf : {ctx.leaf[src[r]], ctx.leaf[dst[r]]})
      if (leaf >= 0) crossed.insert(ctx.leaf_names[size_t(leaf)]);
    for (const std::string& sw : crossed) {
      Acc& a = acc[sw];
      a.bw.push_back(bw);
      a.rel.push_back(rel);
    }
  }
  for (auto& [name, a] : acc) {
    SwitchDpBandwidth s;
    s.name = name;
    s.records = a.bw.size();
    s.median_bytes_per_s = Median(std::move(a.bw));
    s.relative = Median(std::move(a.rel));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace prism::diagnosis
