#include "diagnosis/rules/bandwidth_rule.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "analysis/jobs/job_recognition.h"
#include "analysis/pair_key_map.h"
#include "analysis/parallel_for.h"
#include "core/big_blocks.h"
#include "diagnosis/robust_stats.h"
#include "diagnosis/rules/bandwidth_cells.h"
#include "diagnosis/rules/slow_endpoints.h"

namespace prism::diagnosis {
namespace {

constexpr double kMinSigmaFraction = 0.05;

// A value per (element, bin) in one block. Judging keeps several for every element; a vector per
// element and value cost a heap block each to make and to free (scale-10k: 12,000 elements, 14
// blocks each), on one thread after the grid.
template <typename T>
class ByElementBin {
 public:
  ByElementBin(size_t elements, size_t bins, T init) : bins_(bins), values_(elements * bins, init) {}
  T& operator()(size_t e, size_t bin) { return values_[e * bins_ + bin]; }
  const T& operator()(size_t e, size_t bin) const { return values_[e * bins_ + bin]; }

 private:
  size_t bins_;
  std::vector<T> values_;
};

// Per element and bin: degraded or not, with the figures of the worse kind (DP or PP) as the
// finding's evidence.
struct Degradation {
  std::vector<std::vector<bool>> degraded;  // by element: its bins, as FlaggedRuns reads them
  ByElementBin<double> typical, baseline, sigma;
  // Access links only: degraded because its endpoint's pairs fell below their own usual pace
  // (slow_endpoints.h), with typical = that pace over the usual and baseline = 1.
  ByElementBin<uint8_t> own_pace;
  // Their slow records: the records of the endpoint's slow pairs in the bin (by element, bin).
  std::map<std::pair<size_t, size_t>, std::vector<uint32_t>> own_pace_rows;
};

// One kind's judgement of every element in every bin: against its peers of the same element kind
// in that bin (k sigma below their median, and at least the minimum drop below it).
struct KindJudgement {
  KindJudgement(size_t elements, size_t bins)
      : typical(elements, bins, 0.0), baseline(elements, bins, 1.0), sigma(elements, bins, 0.0),
        below_peers(elements, bins, 0) {}
  ByElementBin<double> typical, baseline, sigma;
  ByElementBin<uint8_t> below_peers;
};

// Peer groups: switches with switches, fabric links with fabric links, and access links with the
// access links of their own job. A job's links share what its schedule does to them (a straggler
// it waits for, a last step cut by the window's end), which is no link's fault.
std::vector<std::vector<size_t>> PeerGroups(const RuleContext& rc, const CellGrid& grid) {
  std::map<std::pair<ElementKind, int>, std::vector<size_t>> groups;
  for (size_t e = 0; e < grid.elements.size(); ++e) {
    const Element& el = grid.elements[e];
    const int job = el.kind == ElementKind::kAccessLink ? rc.results.job_of[el.endpoint] : -1;
    groups[{el.kind, job}].push_back(e);
  }
  std::vector<std::vector<size_t>> out;
  for (auto& [key, members] : groups) out.push_back(std::move(members));
  return out;
}

// Fills bin `bin` of `j` (the elements' judgement for `kind`), and nothing else: the groups are
// disjoint, so bins and kinds may be judged side by side.
void JudgeBinAgainstPeers(const RuleContext& rc, const CellGrid& grid,
                          const std::vector<std::vector<size_t>>& groups, int kind, size_t bin,
                          KindJudgement& j) {
  const DiagnosisOptions& o = rc.options;
  std::vector<double> typicals;
  std::vector<size_t> ids;
  for (const std::vector<size_t>& members : groups) {
    typicals.clear();
    ids.clear();
    for (size_t e : members) {
      const Cell* c = grid.Find(e, int64_t(bin), kind);
      if (c == nullptr || c->flows < kMinFlowsPerCell) continue;
      j.typical(e, bin) = c->typical;
      typicals.push_back(c->typical);
      ids.push_back(e);
    }
    if (typicals.size() < 3) continue;
    const double base = Median(typicals);
    const double sigma = std::max(RobustSigma(typicals, base), kMinSigmaFraction * base);
    for (size_t e : ids) {
      j.baseline(e, bin) = base;
      j.sigma(e, bin) = sigma;
      j.below_peers(e, bin) =
          j.typical(e, bin) < base - o.k * sigma && j.typical(e, bin) < base * (1 - o.min_bw_drop);
    }
  }
}

// Elements per chunk when the elements are judged against their own better times on threads
// (scale-10k: ~12,000 elements, each a few microseconds).
constexpr size_t kElementsPerChunk = 64;

// Hash collisions make some links slow all the time; that is the fabric's normal, not a fault.
// So a degraded bin must also have dropped against the element's own better times (its 75th
// percentile bin). An element degraded through the whole window is left to the service, which
// carries history across windows. More traffic through the element than usual also slows its
// flows: that is contention, not lost capacity. So the drop is judged after crediting the bin
// with its extra offered load (bytes through the element relative to its median bin).
Degradation JudgeBins(const RuleContext& rc, const CellGrid& grid,
                      std::vector<SlowEndpointBin> slow_endpoints) {
  const DiagnosisOptions& o = rc.options;
  const size_t n = grid.elements.size();
  const size_t bins = size_t(grid.bins);
  Degradation d{std::vector<std::vector<bool>>(n, std::vector<bool>(bins, false)),
                {n, bins, 0.0}, {n, bins, 1.0}, {n, bins, 0.0}, {n, bins, 0}, {}};
  // Every (kind, bin) is judged against its peers on its own, side by side on threads.
  const std::vector<std::vector<size_t>> groups = PeerGroups(rc, grid);
  KindJudgement by_kind[2] = {KindJudgement(n, bins), KindJudgement(n, bins)};
  analysis::ParallelFor(2 * bins, rc.options.threads, [&](size_t item) {
    const int kind = static_cast<int>(item / bins);
    JudgeBinAgainstPeers(rc, grid, groups, kind, item % bins, by_kind[kind]);
  });
  // Then each element against its own better times, the elements side by side: an element's
  // entries of `d` are its own, and its kinds are taken in order, as one thread takes them.
  analysis::ParallelForInChunks(n, rc.options.threads, kElementsPerChunk, [&](size_t e) {
    // Kept by the thread from element to element (the threads share one malloc arena).
    thread_local std::vector<double> own, load;
    for (int kind : {0, 1}) {
      const KindJudgement& j = by_kind[kind];
      own.clear();
      load.clear();
      for (size_t bin = 0; bin < bins; ++bin) {
        if (j.typical(e, bin) <= 0) continue;
        own.push_back(j.typical(e, bin));
        load.push_back(grid.Find(e, int64_t(bin), kind)->bytes);  // typical > 0: it has records
      }
      if (own.size() < 3) continue;
      const double typical_load = Median(load);
      std::sort(own.begin(), own.end());
      const double ref = own[own.size() * 3 / 4];
      for (size_t bin = 0; bin < bins; ++bin) {
        if (!j.below_peers(e, bin)) continue;
        const Cell* c = grid.Find(e, int64_t(bin), kind);
        const double extra_load = std::max(1.0, (c != nullptr ? c->bytes : 0.0) / typical_load);
        if (j.typical(e, bin) * extra_load > ref * (1 - o.min_bw_drop)) continue;
        // Keep the worse kind's figures as the finding's evidence.
        if (!d.degraded[e][bin] ||
            j.typical(e, bin) / j.baseline(e, bin) < d.typical(e, bin) / d.baseline(e, bin)) {
          d.typical(e, bin) = j.typical(e, bin);
          d.baseline(e, bin) = j.baseline(e, bin);
          d.sigma(e, bin) = j.sigma(e, bin);
        }
        d.degraded[e][bin] = true;
      }
    }
  });
  // Access links also against their endpoint's own pairs: where one link slows a large share of
  // a small job's flows, the peer comparison above cannot tell which links are the normal ones.
  for (SlowEndpointBin& s : slow_endpoints) {
    const long e = grid.AccessLinkOf(s.endpoint);
    if (e < 0) continue;
    const size_t bin = size_t(s.bin);
    if (d.degraded[size_t(e)][bin] &&
        d.typical(size_t(e), bin) / d.baseline(size_t(e), bin) <= s.pace_ratio)
      continue;
    d.degraded[size_t(e)][bin] = true;
    d.own_pace(size_t(e), bin) = true;
    d.typical(size_t(e), bin) = s.pace_ratio;
    d.baseline(size_t(e), bin) = 1;
    d.sigma(size_t(e), bin) = 0;
    d.own_pace_rows[{size_t(e), bin}] = std::move(s.slow_rows);
  }
  return d;
}

// The records below the drop threshold that crossed element `e` in `bin`, both kinds, sorted;
// for an access link degraded against its own pairs' pace, the records of those slow pairs.
std::vector<uint32_t> SlowRows(const CellGrid& grid, const Degradation& d, size_t e, size_t bin) {
  if (d.own_pace(e, bin)) return d.own_pace_rows.at({e, bin});
  std::vector<uint32_t> rows;
  for (int kind : {0, 1})
    if (const Cell* c = grid.Find(e, int64_t(bin), kind))
      for (uint32_t r : grid.SlowOf(*c)) rows.push_back(r);
  std::sort(rows.begin(), rows.end());
  return rows;
}

// How far below its peers an element is in a bin (lower: worse).
double Ratio(const Degradation& d, size_t e, size_t bin) { return d.typical(e, bin) / d.baseline(e, bin); }

// Whether element `other` is worse than `e` in the bin (ties: the first name wins).
bool Worse(const CellGrid& grid, const Degradation& d, size_t other, size_t e, size_t bin) {
  const double worse = Ratio(d, other, bin), self = Ratio(d, e, bin);
  return worse < self || (worse == self && grid.elements[other].name < grid.elements[e].name);
}

// The elements a record crossed, as the grid routed it: its route's switches and fabric links
// (RouteElements) and the access links of both ends.
std::vector<size_t> ElementsOf(const RuleContext& rc, const CellGrid& grid, uint32_t r) {
  const auto& f = rc.flows;
  const EndpointId src = f.src()[r], dst = f.dst()[r];
  std::vector<size_t> out;
  auto add = [&](long e) {
    if (e >= 0) out.push_back(size_t(e));
  };
  for (const Element& el : RouteElements(rc, f.point()[r], rc.ctx.leaf[src], rc.ctx.leaf[dst]))
    add(grid.IndexOf(el.name));
  add(grid.AccessLinkOf(src));
  add(grid.AccessLinkOf(dst));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The element's slow records in the bin each count for every other element they crossed; an
// element crossed by two thirds of them that `explains` accepts explains the element. A flow
// crosses several elements and is slow on all of them when one is its bottleneck: the worse
// element that most of the slow flows share is the one to blame.
template <typename Accept>
bool ExplainedBySharedSlowFlows(const RuleContext& rc, const CellGrid& grid, const Degradation& d,
                                size_t e, size_t bin, Accept explains) {
  const std::vector<uint32_t> mine = SlowRows(grid, d, e, bin);
  if (mine.empty()) return false;
  std::map<size_t, size_t> shared;
  for (uint32_t r : mine)
    for (size_t other : ElementsOf(rc, grid, r))
      if (other != e) ++shared[other];
  for (auto [other, n] : shared)
    if (n * 3 >= mine.size() * 2 && explains(other)) return true;
  return false;
}

// Of the records of the far ends of an access link's slow flows, the share (weighted by those
// slow flows) that are slow too though they do not cross the link. A degraded access link slows
// its own endpoint's flows only: its peers' other flows run as usual. Where the peers' other flows
// are slow as well, the slowness travels with the collective (a ring that crosses a bad spine
// runs each hop at the pace of its slowest) and the link is a victim, not the cause.
double FarEndSlowShare(const RuleContext& rc, const CellGrid& grid, const Degradation& d, size_t e,
                       size_t bin) {
  const EndpointId self = grid.elements[e].endpoint;
  std::map<EndpointId, size_t> slow_with_self;
  for (uint32_t r : SlowRows(grid, d, e, bin)) {
    const EndpointId src = rc.flows.src()[r], dst = rc.flows.dst()[r];
    ++slow_with_self[src == self ? dst : src];
  }
  double weighted = 0, weight = 0;
  for (auto [far, n] : slow_with_self) {
    const long link = grid.AccessLinkOf(far);
    if (link < 0) continue;
    size_t flows = 0, slow = 0;
    for (int kind : {0, 1}) {
      if (const Cell* c = grid.Find(size_t(link), int64_t(bin), kind)) {
        flows += c->flows;
        slow += c->slow_count;
      }
    }
    if (flows < n + kMinFlowsPerCell / 4 || slow < n) continue;  // too few other flows to judge
    weighted += double(n) * double(slow - n) / double(flows - n);
    weight += double(n);
  }
  return weight > 0 ? weighted / weight : 0;
}

// Per element, the bins where it is degraded and nothing else explains it. In two passes:
//  1. Access links. A degraded leaf switch explains its access links, unless the switch is slow
//     because of this one link (two thirds of its slow flows cross it); a degraded switch or
//     fabric link that carries most of the link's slow flows explains it (an endpoint's flows
//     spread over the spines: when its slow ones gather on one, that is the spine's doing), and
//     so does the far end's access link when it is worse. And where the link's peers are slow on
//     their other flows as well (FarEndSlowShare), the link is not the cause.
//  2. Switches and fabric links. A degraded switch at either end explains a fabric link; a worse
//     degraded fabric link on the same spine, or a worse access link left unexplained by pass
//     1, that carries two thirds of its slow flows explains it. A switch is explained by such an
//     access link alone: one bad NIC link must not be blamed on the whole leaf.
std::vector<std::vector<bool>> Unexplained(const RuleContext& rc, const CellGrid& grid,
                                           const Degradation& d) {
  std::vector<std::vector<bool>> flags = d.degraded;
  auto switch_degraded = [&](const std::string& name, size_t bin) {
    const long i = grid.IndexOf(name);
    return i >= 0 && d.degraded[size_t(i)][bin];
  };
  const size_t bins = size_t(grid.bins);
  for (size_t e = 0; e < grid.elements.size(); ++e) {
    const Element& el = grid.elements[e];
    if (el.kind != ElementKind::kAccessLink) continue;
    const long leaf = el.a.empty() ? -1 : grid.IndexOf(el.a);
    for (size_t bin = 0; bin < bins; ++bin) {
      if (!flags[e][bin]) continue;
      const bool by_leaf =
          leaf >= 0 && d.degraded[size_t(leaf)][bin] &&
          !ExplainedBySharedSlowFlows(rc, grid, d, size_t(leaf), bin,
                                      [&](size_t other) { return other == e; });
      // Judged by its own pairs, the far ends' other pairs were already found at their pace.
      const bool victim = !d.own_pace(e, bin) && FarEndSlowShare(rc, grid, d, e, bin) >= 0.5;
      flags[e][bin] = !by_leaf && !victim &&
                      !ExplainedBySharedSlowFlows(rc, grid, d, e, bin, [&](size_t other) {
        return d.degraded[other][bin] &&
               (grid.elements[other].kind != ElementKind::kAccessLink || Worse(grid, d, other, e, bin));
      });
    }
  }
  auto access_link_to_blame = [&](size_t other, size_t e, size_t bin) {
    return grid.elements[other].kind == ElementKind::kAccessLink && flags[other][bin] &&
           Worse(grid, d, other, e, bin);
  };
  for (size_t e = 0; e < grid.elements.size(); ++e) {
    const Element& el = grid.elements[e];
    for (size_t bin = 0; bin < bins; ++bin) {
      if (!flags[e][bin]) continue;
      if (el.kind == ElementKind::kFabricLink) {
        if (switch_degraded(el.a, bin) || switch_degraded(el.b, bin) ||
            ExplainedBySharedSlowFlows(rc, grid, d, e, bin, [&](size_t other) {
              const Element& ol = grid.elements[other];
              return (ol.kind == ElementKind::kFabricLink && ol.b == el.b &&
                      d.degraded[other][bin] && Worse(grid, d, other, e, bin)) ||
                     access_link_to_blame(other, e, bin);
            }))
          flags[e][bin] = false;
      } else if (el.kind == ElementKind::kSwitch) {
        if (ExplainedBySharedSlowFlows(rc, grid, d, e, bin, [&](size_t other) {
              return access_link_to_blame(other, e, bin);
            }))
          flags[e][bin] = false;
      }
    }
  }
  return flags;
}

// Persistent runs of an element's unexplained bins, as findings.
void AddFindings(const CellGrid& grid, const Degradation& d, size_t e, const std::vector<bool>& flags,
                 const DiagnosisOptions& o, NetworkFindings* out) {
  const Element& el = grid.elements[e];
  const bool link = el.kind != ElementKind::kSwitch;
  const bool access = el.kind == ElementKind::kAccessLink;
  for (const Run& run : FlaggedRuns(flags, 1)) {
    Finding fd;
    fd.kind = access ? FindingKind::kDegradedLink
              : link ? FindingKind::kCongestedLink : FindingKind::kDegradedSwitch;
    fd.cause = Cause::kNetwork;
    if (access) {
      fd.gpus = {el.endpoint};
      if (!el.a.empty()) fd.switches = {el.a};
    } else {
      fd.switches = link ? std::vector<std::string>{el.a, el.b} : std::vector<std::string>{el.a};
    }
    fd.start_ns = grid.t0 + int64_t(run.first) * grid.bin_ns;
    fd.end_ns = grid.t0 + int64_t(run.last + 1) * grid.bin_ns;
    fd.metric = "relative_bandwidth";
    std::vector<double> vals, bases;
    std::map<int, size_t> jobs;
    for (size_t bin = run.first; bin <= run.last; ++bin) {
      if (!d.degraded[e][bin]) continue;
      vals.push_back(d.typical(e, bin));
      bases.push_back(d.baseline(e, bin));
      fd.sigma = std::max(fd.sigma, d.sigma(e, bin));
      for (int kind : {0, 1}) {
        if (const Cell* c = grid.Find(e, int64_t(bin), kind))
          for (const JobCount& jc : grid.JobsOf(*c)) jobs[jc.job] += jc.records;
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
    bool own_pace = true;
    for (size_t bin = run.first; bin <= run.last; ++bin)
      if (d.degraded[e][bin] && !d.own_pace(e, bin)) own_pace = false;
    if (own_pace) {
      fd.metric = "relative_pace";
      fd.summary = fmt::format(
          "link {} - {}: its pairs run at {:.0f}% of their usual pace, their peers' other pairs "
          "at theirs, for {} bins of {} s",
          el.b, el.a.empty() ? "its switch" : el.a, 100 * fd.value / fd.baseline, fd.units,
          grid.bin_ns / 1'000'000'000);
      out->findings.push_back(std::move(fd));
      out->jobs_affected.push_back(std::move(affected));
      continue;
    }
    fd.summary = fmt::format("{} {}: flows through it run at {:.0f}% of the fabric's median for {} bins of {} s",
                             link ? "link" : "switch",
                             access ? el.b + " - " + (el.a.empty() ? "its switch" : el.a)
                                    : link ? el.a + " - " + el.b : el.a,
                             100 * fd.value / fd.baseline, fd.units, grid.bin_ns / 1'000'000'000);
    out->findings.push_back(std::move(fd));
    out->jobs_affected.push_back(std::move(affected));
  }
}

}  // namespace

NetworkFindings FindNetworkDegradation(const RuleContext& rc,
                                       const std::function<void()>& before_grid) {
  if (rc.flows.empty()) return {};
  return JudgeFabric(rc, rc.flows.min_start_ns(), rc.flows.LatestStartNs(), before_grid);
}

NetworkFindings JudgeFabric(const RuleContext& rc, int64_t first_start_ns, int64_t last_start_ns,
                            const std::function<void()>& before_grid) {
  NetworkFindings out;
  if (rc.flows.empty()) return out;
  // The endpoints' own paces need only the bins, not the cells: summed by the classes' first pass.
  const CellGrid bins = EmptyCellGrid(first_start_ns, last_start_ns, rc.options.bw_bin_ns);
  // Beside other work (before_grid set), that work holds the other threads until before_grid
  // returns: the classes and the paces are measured on this thread alone. At two threads they
  // had taken three threads (the classes' two runs and the paces) beside the analysis's stages,
  // and the timelines then took 40% longer (docs/performance.md). The classes keep `measure`
  // (their rule context) until they are reset below.
  DiagnosisOptions measure_options = rc.options;
  if (before_grid) measure_options.threads = 1;
  const RuleContext measure{rc.flows, rc.points, rc.ctx, rc.results, measure_options};
  PairPaceSums paces(bins.t0, bins.bin_ns, bins.bins);
  std::optional<RecordClasses> classes(RecordClasses::Measure(measure, &paces));
  std::vector<SlowEndpointBin> slow_endpoints = FindSlowEndpoints(measure, std::move(paces));
  if (before_grid) before_grid();
  const CellGrid grid = BuildCellGrid(rc, *classes, bins);
  classes.reset();
  // The classes' and the grid builder's big buffers were kept (core/big_blocks.h): nothing after
  // this asks for buffers of their size, and judging grows on the heap.
  ReleaseBigBlocks();
  const Degradation d = JudgeBins(rc, grid, std::move(slow_endpoints));
  const std::vector<std::vector<bool>> flags = Unexplained(rc, grid, d);
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
  const auto start = f.start_ns();
  const auto point = f.point();
  // Pass 1: the DP data records and their bandwidth; the median per job.
  std::vector<std::pair<size_t, double>> dp;  // (row, bytes per second)
  std::vector<std::vector<double>> job_bw(results.jobs.size());
  for (size_t r = 0; r < f.size(); ++r) {
    if (f.Bytes(r) <= kBandwidthControlMaxBytes) continue;
    const int job = results.job_of[src[r]];
    if (job < 0 || job != results.job_of[dst[r]]) continue;
    const uint32_t pi = pair_index.Find(analysis::PairKey(src[r], dst[r]));
    if (pi == analysis::PairKeyMap::kNone || !is_dp[pi]) continue;
    const double bw =
        double(f.EstimatedBytes(r)) * 1e9 / double(std::max<int64_t>(1000, f.EndNs(r) - start[r]));
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
