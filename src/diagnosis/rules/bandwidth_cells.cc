#include "diagnosis/rules/bandwidth_cells.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "analysis/jobs/job_recognition.h"
#include "analysis/parallel_for.h"
#include "diagnosis/group_medians.h"
#include "diagnosis/robust_stats.h"
#include "diagnosis/rules/grid_elements.h"
#include "flow/row_runs.h"

namespace prism::diagnosis {
namespace {

constexpr uint16_t kNotJudged = UINT16_MAX;
// The cells a record is in: at most three switches and two fabric links, and the two access links.
constexpr size_t kMaxCellsPerRow = 7;

}  // namespace

int RecordClasses::ComputeClass(size_t r) const {
  const int job = PacedJob(*rc_, r);
  if (job < 0) return -1;
  const auto& f = rc_->flows;
  return ClassOfPair(job, pair_index_.Find(analysis::PairKey(f.src()[r], f.dst()[r])));
}

int RecordClasses::ClassOfPair(int job, uint32_t pair) const {
  if (pair == analysis::PairKeyMap::kNone || label_of_[pair] == analysis::PairLabel::kUnknown)
    return -1;
  return job * 2 + (label_of_[pair] == analysis::PairLabel::kDp ? 0 : 1);
}

int RecordClasses::ClassOf(size_t r) const {
  if (class_.empty()) return ComputeClass(r);
  return class_[r] == kNotJudged ? -1 : int{class_[r]};
}

double RecordClasses::Bandwidth(size_t r) const {
  const auto& f = rc_->flows;
  return double(f.EstimatedBytes(r)) /
         double(std::max<int64_t>(1000, f.EndNs(r) - f.start_ns()[r]));
}

RecordClasses RecordClasses::Measure(const RuleContext& rc, PairPaceSums* paces) {
  RecordClasses out(rc);
  for (const auto& p : rc.results.pairs) {
    const uint32_t i = out.pair_index_.FindOrInsert(analysis::PairKey(p.a, p.b));
    if (i == out.label_of_.size()) out.label_of_.emplace_back();
    out.label_of_[i] = p.label;
  }
  const auto& f = rc.flows;
  const auto src = f.src(), dst = f.dst();
  // Three passes need the class (two for the class medians, one for the cells): it is worked
  // out once and kept in 2 bytes per record, as the pair lookup misses the cache on large
  // windows. With more classes than that holds (32,767 jobs) it is worked out on each pass.
  const size_t classes = 2 * rc.results.jobs.size();
  const bool keep = classes < kNotJudged;
  // Exact per-class medians of the bandwidth, without keeping each judged record's value
  // (8 bytes per record at diagnosis's memory peak): group_medians.h.
  GroupMedians medians(classes);
  if (keep) out.class_.resize(f.size());
  // Each pass runs on the threads, one run of rows each: the first run passes its values to
  // `medians` itself, the others to parts of their own, which the next pass's start merges. Each
  // run writes only its own rows' classes, and the pair lookup is only read. The parts hold a
  // count and a histogram per class; the collected values go to one buffer, each run to its own
  // slice (group_medians.h). On one run there are no parts: the one-thread loops.
  const size_t runs = flow::RowRunsFor(f.size(), rc.options.threads);
  std::vector<GroupMedians> parts;
  for (size_t t = 1; t < runs; ++t) parts.push_back(medians.Part());
  // The paces' sums likewise: a part per later run, appended in run order.
  std::vector<PairPaceSums> pace_parts;
  if (paces != nullptr) {
    paces->NumberPairs(out.pair_index_.size());
    for (size_t t = 1; t < runs; ++t) pace_parts.push_back(paces->EmptyCopy());
  }
  const auto on_runs = [&](auto visit) {
    flow::OnRuns(runs, [&](size_t t) {
      visit(t, f.size() * t / runs, f.size() * (t + 1) / runs, t == 0 ? medians : parts[t - 1]);
    });
  };
  const auto pass = [&](auto visit) {
    on_runs([&](size_t, size_t begin, size_t end, GroupMedians& m) { visit(begin, end, m); });
  };
  on_runs([&](size_t t, size_t begin, size_t end, GroupMedians& m) {
    PairPaceSums* run_paces = t == 0 || paces == nullptr ? paces : &pace_parts[t - 1];
    for (size_t r = begin; r < end; ++r) {
      if (r + kPrefetchAhead < end)  // the pair lookup misses the cache at 100,000 GPUs
        out.pair_index_.Prefetch(analysis::PairKey(src[r + kPrefetchAhead], dst[r + kPrefetchAhead]));
      int c = -1;
      if (const int job = PacedJob(rc, r); job >= 0) {
        const uint32_t pair = out.pair_index_.Find(analysis::PairKey(src[r], dst[r]));
        if (run_paces != nullptr) run_paces->Add(f, r, pair);  // kNone is kNoPair
        c = out.ClassOfPair(job, pair);
      }
      if (keep) out.class_[r] = c < 0 ? kNotJudged : static_cast<uint16_t>(c);
      if (c >= 0) m.Observe(size_t(c), out.Bandwidth(r));
    }
  });
  for (PairPaceSums& later : pace_parts) paces->Append(std::move(later));
  medians.StartCollecting(parts);
  pass([&](size_t begin, size_t end, GroupMedians& m) {
    for (size_t r = begin; r < end; ++r)
      if (const int c = out.ClassOf(r); c >= 0) m.Collect(size_t(c), out.Bandwidth(r));
  });
  out.class_median_ = medians.Finish(parts);
  return out;
}

namespace {

// A builder's grid, its elements not yet named: their keys in the order the builder met them
// (grid_elements.h), the grid's element ids.
struct GridPart {
  CellGrid grid;
  analysis::PairKeyMap element_keys;
};

// Builds the grid's elements and cells in one pass over the records.
class GridBuilder {
 public:
  // `sorted`: rows are sorted by start, so bins close in order: a closed bin's cells keep their
  // typical value instead of every record (see CloseBin).
  GridBuilder(const RuleContext& rc, const RecordClasses& classes, const SwitchIds& switches,
              bool sorted, GridPart* part)
      : rc_(rc), classes_(classes), switches_(switches), grid_(part->grid),
        element_keys_(part->element_keys), sorted_(sorted) {}

  // Rows [begin, end); when sorted, a run of whole bins. Unsorted, the whole run is one open
  // range of rows, every bin open at once.
  void Run(size_t begin, size_t end) {
    const auto& f = rc_.flows;
    const auto start = f.start_ns();
    first_open_row_ = begin;
    if (sorted_) ReserveForBins(start, begin, end);
    for (size_t r = begin; r < end; ++r) {
      const int record_class = classes_.ClassOf(r);
      if (record_class < 0) continue;
      const int64_t bin = BinOf(start[r]);
      if (sorted_ && bin != open_bin_) {
        CloseBin();
        for (uint32_t slot : open_slots_) open_cell_[slot] = -1;
        open_slots_.clear();
        open_bin_ = bin;
        first_open_row_ = r;
        open_row_relative_.clear();
        open_cells_of_row_.clear();
      }
      // Rows are visited in order: the rows not judged since the last one get no cells.
      const size_t k = r - first_open_row_;
      if (open_cells_of_row_.size() < k) open_cells_of_row_.resize(k, 0);
      if (sorted_) {
        if (open_row_relative_.size() < k) open_row_relative_.resize(k);
        open_row_relative_.push_back(classes_.RelativeBandwidth(r));
      }
      const std::span<const uint32_t> route = RouteOf(Route(r));
      for (uint32_t e : route) open_cells_.push_back(OpenCell(e, bin, record_class));
      for (EndpointId end : {f.src()[r], f.dst()[r]})
        open_cells_.push_back(OpenCell(AccessLink(end), bin, record_class));
      open_cells_of_row_.push_back(static_cast<uint8_t>(route.size() + 2));
    }
    CloseBin();
  }

 private:
  int64_t BinOf(int64_t start_ns) const { return (start_ns - grid_.t0) / grid_.bin_ns; }

  // The open bin's lists sized once for the run's largest bin, in big blocks when large
  // (core/big_blocks.h). Grown by doubling, each bin's first rows copied them again and again
  // into fresh heap pages, each page a fault that is dear on a virtual machine: with the cells,
  // ~6,000 of the grid's ~10,600 at 10,240 GPUs on two threads, when the heap was still trimmed
  // before diagnosis (docs/performance.md).
  void ReserveForBins(std::span<const int64_t> start, size_t begin, size_t end) {
    if (begin >= end) return;
    size_t rows = 0;
    for (size_t first = begin; first < end;) {
      // The bin's rows by their bin, as Run numbers them (a bin's end time may not fit in 64 bits).
      const int64_t bin = BinOf(start[first]);
      const size_t next = size_t(std::partition_point(start.begin() + first, start.begin() + end,
                                                      [&](int64_t s) { return BinOf(s) <= bin; }) -
                                 start.begin());
      rows = std::max(rows, next - first);
      first = next;
    }
    open_row_relative_.reserve(rows);
    open_cells_of_row_.reserve(rows);
    open_cells_.reserve(kMaxCellsPerRow * rows);
    judged_rows_.reserve(kMaxCellsPerRow * rows);
  }

  // The element of a key, made (its cells' slots, none yet; sorted, its open cells' too) at its
  // first record. Elements are made only here, so OpenCell need not check for new ones.
  size_t ElementFor(uint64_t key) {
    const size_t e = element_keys_.FindOrInsert(key);
    const size_t slots = grid_.CellsPerElement();
    if (grid_.cell_of.size() < (e + 1) * slots) grid_.cell_of.resize((e + 1) * slots, -1);
    if (sorted_ && open_cell_.size() < 2 * element_keys_.size())
      open_cell_.resize(2 * element_keys_.size(), -1);
    return e;
  }

  // The link between an endpoint's NIC and its leaf: every record of the endpoint crosses it, so
  // a link degraded at the NIC or the leaf port shows here, and only here (its leaf's other ports
  // are fine).
  size_t AccessLink(EndpointId end) {
    if (grid_.access_link_of.size() <= end) grid_.access_link_of.resize(size_t(end) + 1, -1);
    int32_t& e = grid_.access_link_of[end];
    if (e < 0) e = static_cast<int32_t>(ElementFor(AccessLinkKey(end)));
    return size_t(e);
  }

  // The elements a record crosses depend only on (observation point, source leaf, destination
  // leaf): worked out once per combination, in the order of first use (element ids stay the
  // same). Routes are found through a flat map of the packed key: this runs once per record, and
  // consecutive records rarely share a route. Their elements are kept in one list, route after
  // route, where a heap block per route cost a cache miss more per record at 100,000 GPUs.
  uint32_t Route(size_t r) {
    const auto& f = rc_.flows;
    const uint32_t point = f.point()[r];
    const int ls = rc_.ctx.leaf[f.src()[r]], ld = rc_.ctx.leaf[f.dst()[r]];
    // Packed as 24 bits of point and 20 of each leaf (+1: -1 = no leaf); a window never sees
    // that many switches, but if it did the tree keeps the answer right.
    // The flat map numbers packed keys by themselves; slot_of_packed_ gives each its route's
    // place among all routes, odd ones included.
    if (point < (1u << 24) && ls + 1 < (1 << 20) && ld + 1 < (1 << 20)) {
      const uint32_t i = route_index_.FindOrInsert((uint64_t(point) << 40) |
                                                   (uint64_t(ls + 1) << 20) | uint64_t(ld + 1));
      if (i < slot_of_packed_.size()) return slot_of_packed_[i];
      slot_of_packed_.push_back(uint32_t(route_first_.size() - 1));
    } else {
      auto [it, inserted] =
          odd_routes_.try_emplace({point, ls, ld}, uint32_t(route_first_.size() - 1));
      if (!inserted) return it->second;
    }
    route_keys_.clear();
    AppendRouteKeys(switches_, point, ls, ld, &route_keys_);
    for (const uint64_t key : route_keys_) route_elements_.push_back(uint32_t(ElementFor(key)));
    route_first_.push_back(uint32_t(route_elements_.size()));
    return uint32_t(route_first_.size() - 2);
  }
  std::span<const uint32_t> RouteOf(size_t i) const {
    return {route_elements_.data() + route_first_[i], route_elements_.data() + route_first_[i + 1]};
  }

  // The record's cell in element e, made if it has none yet. The cell itself is not touched
  // here: its load and jobs are counted when its bin closes, from its records in record order
  // (the same sums). At 100,000 GPUs an open bin's cells are ~12 MB, so an update per record and
  // element missed the cache on nearly every one.
  int32_t OpenCell(size_t e, int64_t bin, int record_class) {
    const int kind = record_class % 2;
    if (sorted_) {
      // While a bin is open its cells are found through open_cell_[element * 2 + kind]: one
      // small dense array, where cell_of's rows of slots per element missed the cache at
      // 100,000 GPUs. It has the slots of every element made (ElementFor).
      int32_t& oc = open_cell_[e * 2 + size_t(kind)];
      if (oc < 0) {
        oc = static_cast<int32_t>(grid_.cells.size());
        grid_.cells.emplace_back();
        grid_.cell_of[e * grid_.CellsPerElement() + size_t(bin * 2 + kind)] = oc;
        open_slots_.push_back(static_cast<uint32_t>(e * 2 + size_t(kind)));
      }
      return oc;
    }
    int32_t& c = grid_.cell_of[e * grid_.CellsPerElement() + size_t(bin * 2 + kind)];
    if (c < 0) {
      c = static_cast<int32_t>(grid_.cells.size());
      grid_.cells.emplace_back();
    }
    return c;
  }

  // Calls visit(row, first, cells) for each judged row of the open range in row order: `cells`
  // are the row's cells in the order Run opened them (its route's elements, then its two access
  // links), from index `first` of the open range's list. The cells are kept in that order, 4 bytes
  // each, and each row's count of them in a byte; a list of (cell, row), 8 bytes each, was ~18 MB
  // per builder for a 5 s bin at 10,000 GPUs.
  template <typename Visit>
  void ForEachOpenRow(Visit&& visit) const {
    size_t first = 0;
    for (size_t k = 0; k < open_cells_of_row_.size(); ++k) {
      const size_t n = open_cells_of_row_[k];
      if (n == 0) continue;
      visit(first_open_row_ + k, first, std::span<const int32_t>(open_cells_.data() + first, n));
      first += n;
    }
  }

  void CountJob(Cell& c, int job) {
    for (JobCount& jc : c.jobs) {
      if (jc.job == job) return void(++jc.records);
      if (jc.job < 0) return void(jc = {job, 1});
    }
    if (c.more_jobs < 0) {
      c.more_jobs = static_cast<int32_t>(grid_.more_jobs.size());
      grid_.more_jobs.emplace_back();
    }
    auto& more = grid_.more_jobs[size_t(c.more_jobs)];
    auto it = std::find_if(more.begin(), more.end(), [job](const JobCount& jc) { return jc.job == job; });
    if (it == more.end()) more.push_back({job, 1});
    else ++it->records;
  }

  // Closing the bin goes twice through its records' (cell, row) pairs in record order
  // (ForEachOpenRow; a list per cell missed on nearly every record at 100,000 GPUs): once to count
  // each cell's records and slow records, once to add each record to its cell's load and jobs and
  // to place its row in its cell's run of one list for the judged cells' values and, when slow, of
  // the grid's slow rows, record order kept. So every sum and list is the one a pass over each
  // cell's records in record order makes, and the records' values are read in row order; what is
  // reached at random is the open bin's cells (~12 MB at 100,000 GPUs, where the rows grouped by
  // cell reached the bin's records, 60 MB, at random, a miss on nearly every one). Cells are
  // created in the open bin only, so its cells are [first_open_, cells.size()); each cell's slow
  // records are appended to the grid's slow_rows cell after cell.
  void CloseBin() {
    const size_t open = grid_.cells.size() - first_open_;
    const double slow_below = 1 - rc_.options.min_bw_drop;
    records_of_.assign(open, 0);
    slow_of_.assign(open, 0);
    ForEachOpenRow([&](size_t row, size_t, std::span<const int32_t> cells) {
      const bool slow = RelativeOf(row) < slow_below;
      for (const int32_t cell : cells) {
        const size_t k = size_t(cell) - first_open_;
        ++records_of_[k];
        slow_of_[k] += slow;
      }
    });
    // Where each cell's values and slow rows go: its run of each list, cell after cell.
    value_at_.resize(open);
    slow_at_.resize(open);
    size_t values = 0, slow = grid_.slow_rows.size();
    for (size_t k = 0; k < open; ++k) {
      Cell& c = grid_.cells[first_open_ + k];
      c.flows = records_of_[k];
      c.slow_begin = slow;
      c.slow_count = slow_of_[k];
      value_at_[k] = values;
      slow_at_[k] = slow;
      if (c.flows >= kMinFlowsPerCell) values += c.flows;
      slow += c.slow_count;
    }
    grid_.slow_rows.resize(slow);
    judged_rows_.resize(values);
    ForEachOpenRow([&](size_t row, size_t first, std::span<const int32_t> cells) {
      const double bytes = double(rc_.flows.EstimatedBytes(row));
      const int job = classes_.ClassOf(row) / 2;
      const bool slow = RelativeOf(row) < slow_below;
      for (size_t j = 0; j < cells.size(); ++j) {
        if (first + j + kPrefetchAhead < open_cells_.size())
          __builtin_prefetch(&grid_.cells[size_t(open_cells_[first + j + kPrefetchAhead])]);
        const size_t k = size_t(cells[j]) - first_open_;
        Cell& c = grid_.cells[size_t(cells[j])];
        c.bytes += bytes;
        CountJob(c, job);
        if (slow) grid_.slow_rows[slow_at_[k]++] = uint32_t(row);
        if (c.flows >= kMinFlowsPerCell) judged_rows_[value_at_[k]++] = uint32_t(row);
      }
    });
    size_t begin = 0;
    for (size_t k = 0; k < open; ++k) {
      Cell& c = grid_.cells[first_open_ + k];
      if (c.flows < kMinFlowsPerCell) continue;
      cell_values_.resize(c.flows);
      for (size_t i = 0; i < c.flows; ++i) cell_values_[i] = RelativeOf(judged_rows_[begin + i]);
      c.typical = InterquartileMean(std::span<double>(cell_values_));
      begin += c.flows;
    }
    open_cells_.clear();
    first_open_ = grid_.cells.size();
  }

  // A record's relative bandwidth. When rows are sorted, the open bin's rows are the run
  // [first_open_row_, ...) and their values were kept in row order as the rows were added (the
  // same doubles), so closing the bin reads them from one array instead of working them out again
  // from three columns. (Its estimated bytes, read once per cell it is in, come from their
  // column: kept, they were 8 bytes more per record of the bin in each run.)
  double RelativeOf(uint32_t row) const {
    if (sorted_) return open_row_relative_[row - first_open_row_];
    return classes_.RelativeBandwidth(row);
  }

  const RuleContext& rc_;
  const RecordClasses& classes_;
  const SwitchIds& switches_;
  CellGrid& grid_;
  analysis::PairKeyMap& element_keys_;
  const bool sorted_;
  analysis::PairKeyMap route_index_;
  std::vector<uint64_t> route_keys_;  // a new route's elements' keys
  std::vector<uint32_t> slot_of_packed_;  // route_index_'s number -> route
  std::map<std::tuple<uint32_t, int, int>, uint32_t> odd_routes_;  // ids beyond the packed range
  std::vector<uint32_t> route_elements_;  // every route's elements, route after route
  std::vector<uint32_t> route_first_ = {0};  // route i is [route_first_[i], route_first_[i + 1])
  // The open range's cells (ForEachOpenRow) and its judged cells' rows, cell after cell: 4 bytes
  // each per record and element crossed in a bin, tens of MB at 100,000 GPUs, so in kept blocks
  // (core/big_blocks.h) that a doubling grows in place of fresh pages. The judged cells keep
  // their rows (4 bytes) where they kept their values (8): with two threads both runs' lists are
  // held at once. A cell's values are gathered into cell_values_ when its typical value is taken.
  BigVector<int32_t> open_cells_;
  BigVector<uint32_t> judged_rows_;
  std::vector<double> cell_values_;
  // The open range's first row (sorted: the open bin's first judged row; unsorted: the run's
  // first), each of its rows' count of open cells (0: not judged) and, sorted, each row's relative
  // bandwidth (8 bytes per record of one bin; the bit per record of the window that marked the
  // slow ones is not needed).
  size_t first_open_row_ = 0;
  BigVector<uint8_t> open_cells_of_row_;
  BigVector<double> open_row_relative_;
  // Per open cell: its records and slow records, and where its next value and slow row go.
  std::vector<uint32_t> records_of_, slow_of_;
  std::vector<size_t> value_at_, slow_at_;
  size_t first_open_ = 0;
  std::vector<int32_t> open_cell_;
  std::vector<uint32_t> open_slots_;
  int64_t open_bin_ = -1;
};

}  // namespace

std::vector<JobCount> CellGrid::JobsOf(const Cell& c) const {
  std::vector<JobCount> out;
  for (const JobCount& jc : c.jobs)
    if (jc.job >= 0) out.push_back(jc);
  if (c.more_jobs >= 0) {
    const auto& more = more_jobs[size_t(c.more_jobs)];
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

CellGrid EmptyCellGrid(const RuleContext& rc) {
  const auto& f = rc.flows;
  if (f.empty()) return {};
  // Records are binned by start: the bins span the starts, whatever a record's claimed end (a
  // record that claims to last for years must not size the grid).
  return EmptyCellGrid(f.min_start_ns(), f.LatestStartNs(), rc.options.bw_bin_ns);
}

CellGrid EmptyCellGrid(int64_t first_start_ns, int64_t last_start_ns, int64_t bin_ns) {
  CellGrid grid;
  if (last_start_ns < first_start_ns) return grid;
  grid.t0 = first_start_ns;
  grid.bin_ns = bin_ns;
  grid.bins = (last_start_ns - grid.t0) / grid.bin_ns + 1;
  return grid;
}

namespace {

// Where each of `runs` runs of whole bins begins, and where the last ends (rows sorted by start):
// about equal runs of rows, each cut at the bin boundary nearest to an equal split, so that no
// bin's records are split between builders. A run may be empty.
std::vector<size_t> BinRunBounds(std::span<const int64_t> start, const CellGrid& grid, size_t runs) {
  std::vector<size_t> bounds = {0};
  for (size_t k = 1; k < runs; ++k) {
    const size_t target = start.size() * k / runs;
    const int64_t bin = (start[target] - grid.t0) / grid.bin_ns;
    const auto at = [&](int64_t b) {  // the first row of bin b
      return size_t(std::lower_bound(start.begin(), start.end(), grid.t0 + b * grid.bin_ns) -
                    start.begin());
    };
    const size_t before = at(bin), after = at(bin + 1);  // the bin boundaries around the target
    bounds.push_back(std::max(target - before <= after - target ? before : after, bounds.back()));
  }
  bounds.push_back(start.size());
  return bounds;
}

// Appends the grid a builder made of a later run of bins to the grid of the runs before it,
// giving the grid one builder of all those rows makes. One builder makes cells bin by bin, so the
// later run's cells (and their slow rows and further jobs) follow the earlier ones'. It makes an
// element at its first record, so the later run's elements that the earlier runs made (the same
// key) are theirs, and the others follow in the order the later builder made them. The later
// cells are freed chunk by chunk as they are copied, so the cells are not held twice.
void AppendLaterBins(GridPart& later_part, GridPart* out_part) {
  CellGrid& later = later_part.grid;
  CellGrid* out = &out_part->grid;
  const int32_t cell_offset = static_cast<int32_t>(out->cells.size());
  const uint64_t slow_offset = out->slow_rows.size();
  const int32_t more_jobs_offset = static_cast<int32_t>(out->more_jobs.size());
  later.cells.Drain([&](Cell& cell) {
    cell.slow_begin += slow_offset;
    if (cell.more_jobs >= 0) cell.more_jobs += more_jobs_offset;
    out->cells.push_back(cell);
  });
  out->slow_rows.insert(out->slow_rows.end(), later.slow_rows.begin(), later.slow_rows.end());
  for (std::vector<JobCount>& jobs : later.more_jobs) out->more_jobs.push_back(std::move(jobs));
  const size_t slots = out->CellsPerElement();
  const std::vector<uint64_t>& keys = later_part.element_keys.keys();
  std::vector<int32_t> element_of(keys.size());
  for (size_t e = 0; e < keys.size(); ++e) {
    const size_t mine = out_part->element_keys.FindOrInsert(keys[e]);
    if (out->cell_of.size() < (mine + 1) * slots) out->cell_of.resize((mine + 1) * slots, -1);
    element_of[e] = static_cast<int32_t>(mine);
    for (size_t slot = 0; slot < slots; ++slot) {  // the later run's bins only
      const int32_t later_cell = later.cell_of[e * slots + slot];
      if (later_cell >= 0) out->cell_of[mine * slots + slot] = later_cell + cell_offset;
    }
  }
  if (out->access_link_of.size() < later.access_link_of.size())
    out->access_link_of.resize(later.access_link_of.size(), -1);
  for (size_t end = 0; end < later.access_link_of.size(); ++end)
    if (later.access_link_of[end] >= 0)
      out->access_link_of[end] = element_of[size_t(later.access_link_of[end])];
}

// The built grid, its elements named from their keys in the order the builders met them.
CellGrid WithNamedElements(const RuleContext& rc, const SwitchIds& switches, GridPart&& part) {
  CellGrid grid = std::move(part.grid);
  const std::vector<uint64_t>& keys = part.element_keys.keys();
  grid.elements.reserve(keys.size());
  for (const uint64_t key : keys) {
    grid.elements.push_back(NameElement(rc, switches, key));
    grid.index.try_emplace(grid.elements.back().name, grid.elements.size() - 1);
  }
  return grid;
}

}  // namespace

CellGrid BuildCellGrid(const RuleContext& rc, const RecordClasses& classes) {
  return BuildCellGrid(rc, classes, EmptyCellGrid(rc));
}

CellGrid BuildCellGrid(const RuleContext& rc, const RecordClasses& classes, CellGrid grid) {
  const auto& f = rc.flows;
  if (f.empty()) return grid;
  const auto start = f.start_ns();
  const bool sorted = f.sorted_by_start() || std::is_sorted(start.begin(), start.end());
  const size_t runs =
      sorted ? size_t(std::clamp<int64_t>(rc.options.threads, 1, std::max<int64_t>(1, grid.bins))) : 1;
  const SwitchIds switches(rc);
  if (runs == 1) {
    GridPart part{std::move(grid), {}};
    GridBuilder(rc, classes, switches, sorted, &part).Run(0, f.size());
    return WithNamedElements(rc, switches, std::move(part));
  }
  const std::vector<size_t> bounds = BinRunBounds(start, grid, runs);
  std::vector<GridPart> parts(runs, GridPart{grid, {}});  // no elements or cells yet: the bins
  analysis::ParallelFor(runs, static_cast<int>(runs), [&](size_t k) {
    GridBuilder(rc, classes, switches, true, &parts[k]).Run(bounds[k], bounds[k + 1]);
  });
  for (size_t k = 1; k < runs; ++k) AppendLaterBins(parts[k], &parts[0]);
  return WithNamedElements(rc, switches, std::move(parts[0]));
}

std::vector<Element> RouteElements(const RuleContext& rc, uint32_t point, int leaf_src,
                                   int leaf_dst) {
  std::set<std::string> switches;
  const std::string obs = point == kNoPoint ? "" : rc.points.Name(point);
  const std::string leaf_s = leaf_src >= 0 ? rc.ctx.leaf_names[size_t(leaf_src)] : "";
  const std::string leaf_d = leaf_dst >= 0 ? rc.ctx.leaf_names[size_t(leaf_dst)] : "";
  for (const std::string* s : {&obs, &leaf_s, &leaf_d})
    if (!s->empty()) switches.insert(*s);
  std::vector<Element> out;
  for (const auto& s : switches) out.push_back({s, ElementKind::kSwitch, s, "", 0});
  // Observed at a switch that is neither end's leaf: a spine, crossed on two links.
  if (!obs.empty() && obs != leaf_s && obs != leaf_d) {
    for (const std::string* leaf : {&leaf_s, &leaf_d})
      if (!leaf->empty()) out.push_back({*leaf + "|" + obs, ElementKind::kFabricLink, *leaf, obs, 0});
  }
  return out;
}

}  // namespace prism::diagnosis
