#include "diagnosis/rules/bandwidth_rule.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "analysis/jobs/job_recognition.h"
#include "analysis/pair_key_map.h"
#include "diagnosis/group_medians.h"
#include "diagnosis/robust_stats.h"

namespace prism::diagnosis {
namespace {

constexpr uint64_t kControlMaxBytes = 4096;
constexpr size_t kMinFlowsPerCell = 20;   // a (switch, bin) with fewer flows is not judged
constexpr double kMinSigmaFraction = 0.05;

// An element is a switch ("spine03") or a link ("leaf-p000-r2|spine05").
struct Cell {
  size_t flows = 0;
  // The flows' typical relative bandwidth, when flows >= kMinFlowsPerCell: their interquartile
  // mean. Not the median: a link's flows come in a few rate levels (ring chunks of a few sizes),
  // and where two levels hold nearly half the flows each, the median jumps between them when a
  // handful of records is lost or added, which read as a link losing 75% of its bandwidth.
  double typical = 0;
  std::vector<std::pair<int, size_t>> jobs;  // flows per job (a cell sees one or two jobs)
  double bytes = 0;            // offered load through the element in the bin
  std::vector<uint32_t> slow;  // records below the drop threshold, for explaining links away
};

struct Element {
  std::string name;
  bool is_link = false;
  std::string a, b;  // link ends (leaf, spine); a = the switch itself otherwise
};

}  // namespace

NetworkFindings FindNetworkDegradation(const RuleContext& rc) {
  NetworkFindings out;
  const auto& o = rc.options;
  const auto& f = rc.flows;
  if (f.empty()) return out;
  analysis::PairKeyMap pair_index;
  std::vector<analysis::PairLabel> label_of;
  for (const auto& p : rc.results.pairs) {
    const uint32_t i = pair_index.FindOrInsert(analysis::PairKey(p.a, p.b));
    if (i == label_of.size()) label_of.emplace_back();
    label_of[i] = p.label;
  }

  // Bandwidth per class, then relative bandwidth per record. The per-record loops touch no
  // string and no tree: they dominate the cost of diagnosis (docs/performance.md).
  const auto src = f.src(), dst = f.dst();
  const auto start = f.start_ns(), end = f.end_ns();
  const auto bytes = f.bytes();
  const auto point = f.point();
  auto record_bw = [&](size_t r) {
    return double(bytes[r]) / double(std::max<int64_t>(1000, end[r] - start[r]));
  };
  // The class of a record: job * 2 + (0 = DP, 1 = PP), -1 = not judged.
  auto class_of = [&](size_t r) -> int {
    if (bytes[r] <= kControlMaxBytes) return -1;
    const int job = rc.results.job_of[src[r]];
    if (job < 0 || job != rc.results.job_of[dst[r]]) return -1;
    const uint32_t pi = pair_index.Find(analysis::PairKey(src[r], dst[r]));
    if (pi == analysis::PairKeyMap::kNone || label_of[pi] == analysis::PairLabel::kUnknown) return -1;
    return job * 2 + (label_of[pi] == analysis::PairLabel::kDp ? 0 : 1);
  };
  // Four passes need the class (three for the class medians, one for the cells): it is worked
  // out once and kept in 2 bytes per record, as the pair lookup misses the cache on large
  // windows. With more classes than that holds (32,767 jobs) it is worked out on each pass.
  const size_t classes = 2 * rc.results.jobs.size();
  constexpr uint16_t kNotJudged = UINT16_MAX;
  const bool keep_class = classes < kNotJudged;
  std::vector<uint16_t> cls(keep_class ? f.size() : 0);
  auto judged_class = [&](size_t r) -> int {
    if (!keep_class) return class_of(r);
    return cls[r] == kNotJudged ? -1 : int{cls[r]};
  };
  // Exact per-class medians of the bandwidth, without keeping each judged record's value
  // (8 bytes per record at diagnosis's memory peak): group_medians.h.
  GroupMedians class_medians(classes);
  for (size_t r = 0; r < f.size(); ++r) {
    const int c = class_of(r);
    if (keep_class) cls[r] = c < 0 ? kNotJudged : static_cast<uint16_t>(c);
    if (c >= 0) class_medians.Observe(size_t(c), record_bw(r));
  }
  class_medians.StartCounting();
  for (size_t r = 0; r < f.size(); ++r)
    if (const int c = judged_class(r); c >= 0) class_medians.Count(size_t(c), record_bw(r));
  class_medians.StartCollecting();
  for (size_t r = 0; r < f.size(); ++r)
    if (const int c = judged_class(r); c >= 0) class_medians.Collect(size_t(c), record_bw(r));
  const std::vector<double> class_median = class_medians.Finish();
  // A judged record's bandwidth relative to its class's median.
  auto relative_bw = [&](size_t r) { return record_bw(r) / class_median[size_t(judged_class(r))]; };

  const int64_t t0 = f.min_start_ns();
  const int64_t bin_ns = o.bw_bin_ns;
  const int64_t bins = (f.max_end_ns() - t0) / bin_ns + 1;
  std::vector<Element> elements;
  std::map<std::string, size_t> element_index;
  // (element, bin, 0 = DP / 1 = PP flows): judged apart, as a fault may slow only one kind (a
  // throttled fabric link slows ring traffic but not PP sends that are NIC-bound anyway).
  // cell_of[e][bin * 2 + kind] indexes `cells`, -1 = no flow yet.
  std::vector<Cell> cells;
  std::vector<std::vector<int32_t>> cell_of;
  auto element = [&](const std::string& name, bool link, const std::string& a,
                     const std::string& b) {
    auto [it, inserted] = element_index.try_emplace(name, elements.size());
    if (inserted) {
      elements.push_back({name, link, a, b});
      cell_of.emplace_back(size_t(2 * bins), -1);
    }
    return it->second;
  };
  auto find_cell = [&](size_t e, int64_t bin, int kind) -> const Cell* {
    const int32_t c = cell_of[e][size_t(bin * 2 + kind)];
    return c < 0 ? nullptr : &cells[size_t(c)];
  };
  // The elements a record crosses depend only on (observation point, source leaf, destination
  // leaf): worked out once per combination, in the order of first use (element ids stay the same).
  // Routes are found through a flat map of the packed (point, source leaf, destination leaf):
  // this runs once per record, and consecutive records rarely share a route.
  struct Route {
    uint32_t point;
    int ls, ld;
  };
  analysis::PairKeyMap route_index;
  std::map<std::tuple<uint32_t, int, int>, uint32_t> odd_routes;  // ids beyond the packed range
  std::vector<std::vector<size_t>> routes;
  auto route = [&](size_t r) -> const std::vector<size_t>& {
    const Route key{point[r], rc.ctx.leaf[src[r]], rc.ctx.leaf[dst[r]]};
    // Packed as 24 bits of point and 20 of each leaf (+1: -1 = no leaf); a window never sees
    // that many switches, but if it did the tree keeps the answer right.
    uint32_t i;
    if (key.point < (1u << 24) && key.ls + 1 < (1 << 20) && key.ld + 1 < (1 << 20)) {
      i = route_index.FindOrInsert((uint64_t(key.point) << 40) | (uint64_t(key.ls + 1) << 20) |
                                   uint64_t(key.ld + 1));
      if (i < routes.size()) return routes[i];
    } else {
      auto [it, inserted] = odd_routes.try_emplace({key.point, key.ls, key.ld}, uint32_t(routes.size()));
      if (!inserted) return routes[it->second];
    }
    routes.emplace_back();
    std::set<std::string> switches;
    const std::string obs = key.point == kNoPoint ? "" : rc.points.Name(key.point);
    const std::string leaf_s = key.ls >= 0 ? rc.ctx.leaf_names[key.ls] : "";
    const std::string leaf_d = key.ld >= 0 ? rc.ctx.leaf_names[key.ld] : "";
    for (const std::string* s : {&obs, &leaf_s, &leaf_d})
      if (!s->empty()) switches.insert(*s);
    std::vector<size_t>& touched = routes.back();
    for (const auto& s : switches) touched.push_back(element(s, false, s, ""));
    // Observed at a switch that is neither end's leaf: a spine, crossed on two links.
    if (!obs.empty() && obs != leaf_s && obs != leaf_d) {
      for (const std::string* leaf : {&leaf_s, &leaf_d})
        if (!leaf->empty()) touched.push_back(element(*leaf + "|" + obs, true, *leaf, obs));
    }
    return touched;
  };
  // Rows are sorted by start, so bins close in order: a closed bin's cells keep the median of
  // their relative bandwidths instead of every value (16 bytes per record and element crossed).
  const bool sorted = std::is_sorted(start.begin(), start.end());
  // The open bin's values go to one list of (cell, row) in record order, appended without a
  // cache miss (a list per cell missed on nearly every record at 100,000 GPUs); closing the bin
  // groups the rows by cell (a counting sort, record order kept) and takes each cell's median of
  // the rows' relative bandwidths, worked out again from the row (the same double): 8 + 4 bytes
  // per record and element crossed in the open bin, where keeping the value took 16 + 8, and an
  // open bin holds a twelfth of paper's records at diagnosis's memory peak.
  // Cells are created in the open bin only, so its cells are [first_open, cells.size()).
  struct CellRow {
    int32_t cell;
    uint32_t row;
  };
  std::vector<CellRow> open_rows;
  std::vector<uint32_t> grouped;
  std::vector<size_t> first_of;
  std::vector<double> cell_values;
  size_t first_open = 0;
  auto close_cells = [&] {
    const size_t open = cells.size() - first_open;
    first_of.assign(open + 1, 0);
    for (const CellRow& v : open_rows) ++first_of[size_t(v.cell) - first_open + 1];
    for (size_t k = 0; k < open; ++k) first_of[k + 1] += first_of[k];
    grouped.resize(open_rows.size());
    for (const CellRow& v : open_rows) grouped[first_of[size_t(v.cell) - first_open]++] = v.row;
    // first_of[k] now ends cell k's rows (and starts cell k + 1's).
    size_t begin = 0;
    for (size_t k = 0; k < open; ++k) {
      Cell& c = cells[first_open + k];
      const size_t end = first_of[k];
      c.flows = end - begin;
      if (c.flows >= kMinFlowsPerCell) {
        cell_values.clear();
        for (size_t i = begin; i < end; ++i) cell_values.push_back(relative_bw(grouped[i]));
        c.typical = InterquartileMean(cell_values);
      }
      begin = end;
    }
    open_rows.clear();
    first_open = cells.size();
  };
  // While a bin is open its cells are found through open_cell[element * 2 + kind]: one small
  // dense array, where cell_of's per-element arrays missed the cache at 100,000 GPUs.
  std::vector<int32_t> open_cell;
  std::vector<uint32_t> open_slots;
  int64_t open_bin = -1;
  for (size_t r = 0; r < f.size(); ++r) {
    const int record_class = judged_class(r);
    if (record_class < 0) continue;
    const double rel = relative_bw(r);
    const int64_t bin = (start[r] - t0) / bin_ns;
    if (sorted && bin != open_bin) {
      close_cells();
      for (uint32_t slot : open_slots) open_cell[slot] = -1;
      open_slots.clear();
      open_bin = bin;
    }
    for (size_t e : route(r)) {
      const int kind = record_class % 2;
      int32_t ci;
      if (sorted) {
        if (open_cell.size() < 2 * elements.size()) open_cell.resize(2 * elements.size(), -1);
        int32_t& oc = open_cell[e * 2 + size_t(kind)];
        if (oc < 0) {
          oc = static_cast<int32_t>(cells.size());
          cells.emplace_back();
          cell_of[e][size_t(bin * 2 + kind)] = oc;
          open_slots.push_back(static_cast<uint32_t>(e * 2 + size_t(kind)));
        }
        ci = oc;
      } else {
        int32_t& c = cell_of[e][size_t(bin * 2 + kind)];
        if (c < 0) {
          c = static_cast<int32_t>(cells.size());
          cells.emplace_back();
        }
        ci = c;
      }
      Cell& c = cells[size_t(ci)];
      open_rows.push_back({ci, static_cast<uint32_t>(r)});
      c.bytes += double(bytes[r]);
      if (rel < 1 - o.min_bw_drop) c.slow.push_back(static_cast<uint32_t>(r));
      const int job = record_class / 2;
      auto it = std::find_if(c.jobs.begin(), c.jobs.end(), [job](const auto& jn) { return jn.first == job; });
      if (it == c.jobs.end()) c.jobs.push_back({job, 1});
      else ++it->second;
    }
  }
  close_cells();
  std::vector<CellRow>().swap(open_rows);
  std::vector<uint32_t>().swap(grouped);
  std::vector<double>().swap(cell_values);
  std::vector<uint16_t>().swap(cls);

  // Per bin and flow kind: which switches and which links are degraded.
  std::vector<std::vector<bool>> degraded(elements.size(), std::vector<bool>(bins, false));
  std::vector<std::vector<double>> med(elements.size(), std::vector<double>(bins, 0));
  std::vector<std::vector<double>> ref_base(elements.size(), std::vector<double>(bins, 1));
  std::vector<std::vector<double>> ref_sigma(elements.size(), std::vector<double>(bins, 0));
  for (int kind : {0, 1}) {
    std::vector<std::vector<double>> kmed(elements.size(), std::vector<double>(bins, 0));
    std::vector<std::vector<bool>> kdeg(elements.size(), std::vector<bool>(bins, false));
    std::vector<std::vector<double>> kbase(elements.size(), std::vector<double>(bins, 1));
    std::vector<std::vector<double>> ksig(elements.size(), std::vector<double>(bins, 0));
    for (int64_t bin = 0; bin < bins; ++bin) {
      for (bool link : {false, true}) {
        std::vector<double> medians;
        std::vector<size_t> ids;
        for (size_t e = 0; e < elements.size(); ++e) {
          if (elements[e].is_link != link) continue;
          const Cell* c = find_cell(e, bin, kind);
          if (c == nullptr || c->flows < kMinFlowsPerCell) continue;
          kmed[e][bin] = c->typical;
          medians.push_back(kmed[e][bin]);
          ids.push_back(e);
        }
        if (medians.size() < 3) continue;
        const double base = Median(medians);
        const double sigma = std::max(RobustSigma(medians, base), kMinSigmaFraction * base);
        for (size_t e : ids) {
          kbase[e][bin] = base;
          ksig[e][bin] = sigma;
          kdeg[e][bin] =
              kmed[e][bin] < base - o.k * sigma && kmed[e][bin] < base * (1 - o.min_bw_drop);
        }
      }
    }
    // Hash collisions make some links slow all the time; that is the fabric's normal, not a
    // fault. So a degraded bin must also have dropped against the element's own better times
    // (its 75th percentile bin). An element degraded through the whole window is left to the
    // service, which carries history across windows.
    // More traffic through the element than usual also slows its flows: that is contention, not
    // lost capacity. So the drop is judged after crediting the bin with its extra offered load
    // (bytes through the element relative to its median bin).
    for (size_t e = 0; e < elements.size(); ++e) {
      std::vector<double> own, load;
      for (int64_t bin = 0; bin < bins; ++bin) {
        if (kmed[e][bin] <= 0) continue;
        own.push_back(kmed[e][bin]);
        load.push_back(find_cell(e, bin, kind)->bytes);  // kmed > 0: the cell has flows
      }
      if (own.size() < 3) continue;
      const double typical_load = Median(load);
      std::sort(own.begin(), own.end());
      const double ref = own[own.size() * 3 / 4];
      for (int64_t bin = 0; bin < bins; ++bin) {
        const Cell* c = find_cell(e, bin, kind);
        const double extra_load = std::max(1.0, (c != nullptr ? c->bytes : 0.0) / typical_load);
        if (!kdeg[e][bin]) continue;
        if (kmed[e][bin] * extra_load > ref * (1 - o.min_bw_drop)) continue;
        // Keep the worse kind's figures as the finding's evidence.
        if (!degraded[e][bin] || kmed[e][bin] / kbase[e][bin] < med[e][bin] / ref_base[e][bin]) {
          med[e][bin] = kmed[e][bin];
          ref_base[e][bin] = kbase[e][bin];
          ref_sigma[e][bin] = ksig[e][bin];
        }
        degraded[e][bin] = true;
      }
    }
  }
  // A degraded link is explained by a degraded switch at one of its ends in the same bin.
  auto switch_degraded = [&](const std::string& name, int64_t bin) {
    auto it = element_index.find(name);
    return it != element_index.end() && degraded[it->second][bin];
  };
  // A flow crosses two links; when one is the bottleneck, the other sees the same slow flows.
  // A degraded link whose slow flows mostly (two thirds) also cross a worse degraded link on the same
  // spine in the same bin is explained by that link (ties: the first name wins).
  auto slow_rows = [&](size_t e, int64_t bin) {
    std::vector<uint32_t> rows;
    for (int kind : {0, 1}) {
      if (const Cell* c = find_cell(e, bin, kind))
        rows.insert(rows.end(), c->slow.begin(), c->slow.end());
    }
    std::sort(rows.begin(), rows.end());
    return rows;
  };
  auto explained_by_link = [&](size_t e, int64_t bin) {
    const Element& el = elements[e];
    const std::vector<uint32_t> mine = slow_rows(e, bin);
    if (mine.empty()) return false;
    for (size_t other = 0; other < elements.size(); ++other) {
      const Element& ol = elements[other];
      if (other == e || !ol.is_link || ol.b != el.b || !degraded[other][bin]) continue;
      const double worse = med[other][bin] / ref_base[other][bin];
      const double self = med[e][bin] / ref_base[e][bin];
      if (worse > self || (worse == self && ol.name > el.name)) continue;
      const std::vector<uint32_t> theirs = slow_rows(other, bin);
      std::vector<uint32_t> shared;
      std::set_intersection(mine.begin(), mine.end(), theirs.begin(), theirs.end(),
                            std::back_inserter(shared));
      if (shared.size() * 3 >= mine.size() * 2) return true;
    }
    return false;
  };
  for (size_t e = 0; e < elements.size(); ++e) {
    const Element& el = elements[e];
    std::vector<bool> flags = degraded[e];
    if (el.is_link)
      for (int64_t bin = 0; bin < bins; ++bin)
        if (flags[bin] && (switch_degraded(el.a, bin) || switch_degraded(el.b, bin) ||
                           explained_by_link(e, bin)))
          flags[bin] = false;
    for (const Run& run : FlaggedRuns(flags, 1)) {
      Finding fd;
      fd.kind = el.is_link ? "congested_link" : "degraded_switch";
      fd.cause = Cause::kNetwork;
      fd.switches = el.is_link ? std::vector<std::string>{el.a, el.b} : std::vector<std::string>{el.a};
      fd.start_ns = t0 + int64_t(run.first) * bin_ns;
      fd.end_ns = t0 + int64_t(run.last + 1) * bin_ns;
      fd.metric = "relative_bandwidth";
      std::vector<double> vals, bases;
      std::map<int, size_t> jobs;
      for (size_t bin = run.first; bin <= run.last; ++bin) {
        if (!degraded[e][bin]) continue;
        vals.push_back(med[e][bin]);
        bases.push_back(ref_base[e][bin]);
        fd.sigma = std::max(fd.sigma, ref_sigma[e][bin]);
        for (int kind : {0, 1}) {
          if (const Cell* c = find_cell(e, int64_t(bin), kind))
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
                               el.is_link ? "link" : "switch", el.is_link ? el.a + " - " + el.b : el.a,
                               100 * fd.value / fd.baseline, fd.units, bin_ns / 1'000'000'000);
      out.findings.push_back(std::move(fd));
      out.jobs_affected.push_back(std::move(affected));
    }
  }
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
    if (bytes[r] <= kControlMaxBytes) continue;
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
