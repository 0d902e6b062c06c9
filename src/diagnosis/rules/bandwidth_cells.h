// File: diagnosis/rules/bandwidth_cells.h
// The data of the bandwidth rule (bandwidth_rule.h), built in two stages that each pass over the
// window's records once or a few times:
//  1. RecordClasses: each data record's class — its job and whether its pair is DP (kind 0) or
//     PP/TP (kind 1) — and each class's median bandwidth, so a record's relative bandwidth is its
//     bytes per second over its class's median (which removes how many channels share a NIC).
//  2. CellGrid: the network elements a record crossed — switches (its observation point and the
//     leaves of both ends), fabric links (leaf to spine, when it was observed at a spine) and the
//     access links of both ends (NIC to leaf) — and per (element, time bin, kind) a cell with the
//     typical relative bandwidth of its records, the load offered through it and its slow records.
// The rule judges the cells (bandwidth_rule.cc). Both stages are plain data, tested alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "analysis/pair_key_map.h"
#include "core/big_blocks.h"
#include "core/chunked_vector.h"
#include "core/prefetch.h"
#include "diagnosis/rules/rule_context.h"
#include "diagnosis/rules/slow_endpoints.h"

namespace prism::diagnosis {

inline constexpr uint64_t kBandwidthControlMaxBytes = 4096;  // smaller records carry no data
inline constexpr size_t kMinFlowsPerCell = 20;  // a cell with fewer records is not judged

// The job of row `r` when the record carries a pace: data (not a control record, not a single
// packet: start < end) between two endpoints of one job; else -1.
inline int PacedJob(const RuleContext& rc, size_t r) {
  const auto& f = rc.flows;
  // A record of one packet (start == end) carries no rate: a capture of a segmented send holds
  // 64 KiB "packets" that would read as terabits per second. The control test is on the bytes
  // the record holds, as the transfer builder's: sampled ACKs do not become data by their N.
  if (f.Bytes(r) <= kBandwidthControlMaxBytes || f.EndNs(r) <= f.start_ns()[r]) return -1;
  const int job = rc.results.job_of[f.src()[r]];
  return job >= 0 && job == rc.results.job_of[f.dst()[r]] ? job : -1;
}

// Per record: class = job * 2 + kind, or -1 (not judged: no pace (PacedJob), pair of unknown
// label). Measure's passes over the records run on rc.options.threads threads, one run of rows
// each (flow/row_runs.h); the classes and medians are the same on any number.
class RecordClasses {
 public:
  // `paces`, when given, gets every paced record (slow_endpoints.h) from the first pass.
  static RecordClasses Measure(const RuleContext& rc, PairPaceSums* paces = nullptr);

  int ClassOf(size_t row) const;
  double Bandwidth(size_t row) const;  // bytes per ns
  void PrefetchClass(size_t row) const {
    if (!class_.empty()) __builtin_prefetch(&class_[row]);
  }
  double RelativeBandwidth(size_t row) const {
    return Bandwidth(row) / class_median_[size_t(ClassOf(row))];
  }
  size_t classes() const { return class_median_.size(); }
  // Frees the per-record classes (2 bytes per record) once the cells are built.
  void Release() { BigVector<uint16_t>().swap(class_); }

 private:
  explicit RecordClasses(const RuleContext& rc) : rc_(&rc) {}
  int ComputeClass(size_t row) const;
  // The class of a paced row of `job` whose pair is number `pair` in pair_index_ (or kNone).
  int ClassOfPair(int job, uint32_t pair) const;

  const RuleContext* rc_;
  // Per record; empty when there are too many classes to hold. In a kept block when large (core/
  // big_blocks.h): the analysis keeps one of this size for it (pipeline/analyze_window.h).
  BigVector<uint16_t> class_;
  std::vector<double> class_median_;
  analysis::PairKeyMap pair_index_;
  std::vector<analysis::PairLabel> label_of_;  // by pair index
};

enum class ElementKind { kSwitch, kFabricLink, kAccessLink };

// A switch ("spine03"), a fabric link ("leaf-p000-r2|spine05": a = the leaf, b = the spine) or an
// access link ("10.0.3.5|leaf-p000-r2": a = the leaf, b = the endpoint's address, endpoint set).
struct Element {
  std::string name;
  ElementKind kind = ElementKind::kSwitch;
  std::string a, b;
  EndpointId endpoint = 0;  // access links only
};

// Records of one job in a cell.
struct JobCount {
  int32_t job = -1;  // -1: unused
  uint32_t records = 0;
  bool operator==(const JobCount&) const = default;
};

// 56 bytes and no allocation of its own: the grid holds a cell per (element, bin, kind) that saw
// a judged record, all at once at diagnosis's memory peak. A cell's slow records are a range of
// CellGrid::slow_rows, and a cell sees one or two jobs (held here) except on a spine, whose
// further jobs are in CellGrid::more_jobs.
struct Cell {
  // The records' typical relative bandwidth, when flows >= kMinFlowsPerCell: their interquartile
  // mean. Not the median: a link's flows come in a few rate levels (ring chunks of a few sizes),
  // and where two levels hold nearly half the flows each, the median jumps between them when a
  // handful of records is lost or added, which read as a link losing 75% of its bandwidth.
  double typical = 0;
  double bytes = 0;  // offered load through the element in the bin
  uint64_t slow_begin = 0;  // records below the drop threshold, for explaining elements away:
  uint32_t slow_count = 0;  // CellGrid::SlowOf
  uint32_t flows = 0;
  JobCount jobs[2];         // the first two jobs seen, in that order
  int32_t more_jobs = -1;   // index into CellGrid::more_jobs, -1 = none
};
static_assert(sizeof(Cell) == 56);

struct CellGrid {
  int64_t t0 = 0, bin_ns = 0, bins = 0;
  std::vector<Element> elements;
  // In chunks: growing it copies nothing, where a vector's last doubling held both copies at
  // diagnosis's memory peak (scale-10k: 300,000 cells); and one allocation per 2,048 cells, where
  // a deque's per 9 made the grid's builders on two threads wait on malloc's lock.
  ChunkedVector<Cell> cells;
  std::vector<uint32_t> slow_rows;  // each cell's slow records in record order, cell after cell
  std::vector<std::vector<JobCount>> more_jobs;  // a cell's jobs after its first two
  // [element * CellsPerElement() + bin * 2 + kind] -> cells, -1 = none: one array, where one per
  // element was an allocation per element in each of the grid's builders.
  std::vector<int32_t> cell_of;
  std::map<std::string, size_t> index;  // element name -> element
  std::vector<int32_t> access_link_of;  // [endpoint] -> its access link element, -1 = none

  size_t CellsPerElement() const { return size_t(2 * bins); }

  std::span<const uint32_t> SlowOf(const Cell& c) const {
    return {slow_rows.data() + c.slow_begin, c.slow_count};
  }
  // Records per job, jobs in the order the cell first saw them.
  std::vector<JobCount> JobsOf(const Cell& c) const;
  const Cell* Find(size_t element, int64_t bin, int kind) const {
    const int32_t c = cell_of[element * CellsPerElement() + size_t(bin * 2 + kind)];
    return c < 0 ? nullptr : &cells[size_t(c)];
  }
  // The element's index by name, or -1.
  long IndexOf(const std::string& name) const {
    const auto it = index.find(name);
    return it == index.end() ? -1 : long(it->second);
  }
  // The access link of a record's end, or -1.
  long AccessLinkOf(EndpointId endpoint) const {
    return endpoint < access_link_of.size() ? access_link_of[endpoint] : -1;
  }
};

// The window's bins (t0, bin_ns, bins: by record start, spanning the starts), no elements yet.
CellGrid EmptyCellGrid(const RuleContext& rc);
// The same for records starting in [first_start_ns, last_start_ns].
CellGrid EmptyCellGrid(int64_t first_start_ns, int64_t last_start_ns, int64_t bin_ns);

// One pass over the rows. With rc.options.threads > 1 (and rows sorted by start), one pass per
// thread over its own run of whole bins, the runs' grids appended in bin order into the grid one
// pass makes (the same numbering of elements and cells). Each record's class, bin, relative
// bandwidth and route are worked out once, where a split by element kind (switches beside links)
// worked them out in both passes. The price is memory: each run holds its open bin's (cell, row)
// list and values, 16 bytes per record and element crossed in a bin (docs/performance.md).
CellGrid BuildCellGrid(const RuleContext& rc, const RecordClasses& classes);
// The same in the bins of `bins` (an EmptyCellGrid spanning every record's start).
CellGrid BuildCellGrid(const RuleContext& rc, const RecordClasses& classes, CellGrid bins);

// The switches and fabric links a record observed at `point` between ends on leaves `leaf_src`
// and `leaf_dst` (-1: unknown) crossed, in a fixed order: the switches by name (its observation
// point and both leaves), then, when a spine saw it, the links from each end's leaf to that spine.
// The access links depend on the endpoints, not the route: CellGrid::AccessLinkOf.
std::vector<Element> RouteElements(const RuleContext& rc, uint32_t point, int leaf_src,
                                   int leaf_dst);

}  // namespace prism::diagnosis
