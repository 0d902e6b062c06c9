#include "analysis/classify/transfers.h"

#include <algorithm>
#include <utility>

#include "analysis/jobs/job_recognition.h"
#include "analysis/pair_key_map.h"
#include "analysis/parallel_for.h"
#include "core/big_blocks.h"
#include "core/prefetch.h"

namespace prism::analysis {

void TransferBuilder::Add(const flow::FlowTable& flows, flow::RowId r, bool from_a,
                          const TransferOptions& options) {
  const uint64_t bytes = flows.bytes()[r];
  if (bytes <= options.control_max_bytes) {
    ++out_.control_records;
    return;
  }
  ++out_.data_records;
  const int64_t start = flows.start_ns()[r], end = flows.end_ns()[r];
  long& open = open_[from_a ? 0 : 1];
  // Sampled records stand for sampling_rate times their bytes.
  const uint64_t b = flows.EstimatedBytes(r);
  if (open >= 0 && start <= out_.transfers[open].end_ns + options.group_ns) {
    Transfer& t = out_.transfers[open];
    t.end_ns = std::max(t.end_ns, end);
    t.bytes += b;
    ++t.records;
    return;
  }
  open = static_cast<long>(out_.transfers.size());
  out_.transfers.push_back({start, end, b, 1, from_a});
}

namespace {

// Every pair of GPUs of one job that has rows, numbered in the order of its first row, and each
// row's pair (PairKeyMap::kNone for a row not between two GPUs of one job).
struct PairNumbering {
  PairKeyMap index;
  std::vector<GpuPair> pairs;
  BigVector<uint32_t> pair_of_row;
};

// The rows cut into one run per thread (`cut`: runs + 1 bounds). Each run numbers its pairs in
// the order of their first row; the runs' pairs are then numbered in run order, so a pair's
// number is the order of its first row over all rows, as one pass would give. A row's pair is
// known from `row_pairs` (the jobs stage hashed every row's pair already): an array lookup here.
PairNumbering NumberPairs(const flow::FlowTable& flows, const std::vector<int>& job_of,
                          const RowPairs& row_pairs, const std::vector<size_t>& cut,
                          int threads) {
  const auto src = flows.src(), dst = flows.dst();
  const auto& eps = flows.endpoints();
  const size_t runs = cut.size() - 1;
  PairNumbering out;
  out.pair_of_row.assign(flows.size(), PairKeyMap::kNone);
  struct RunPairs {
    std::vector<uint32_t> number_of_key;
    std::vector<flow::RowId> first_row;
  };
  std::vector<RunPairs> run_pairs(runs);
  ParallelFor(runs, threads, [&](size_t k) {
    RunPairs& rp = run_pairs[k];
    rp.number_of_key.assign(row_pairs.keys.size(), PairKeyMap::kNone);
    for (flow::RowId r = flow::RowId(cut[k]); r < cut[k + 1]; ++r) {
      const int j = job_of[src[r]];
      if (j < 0 || j != job_of[dst[r]] || src[r] == dst[r]) continue;
      uint32_t& p = rp.number_of_key[row_pairs.key_of_row[r]];
      if (p == PairKeyMap::kNone) {
        p = uint32_t(rp.first_row.size());
        rp.first_row.push_back(r);
      }
      out.pair_of_row[r] = p;
    }
  });
  std::vector<std::vector<uint32_t>> pair_of_run_pair(runs);
  for (size_t k = 0; k < runs; ++k) {
    for (flow::RowId r : run_pairs[k].first_row) {
      const uint32_t p = out.index.FindOrInsert(PairKey(src[r], dst[r]));
      if (p == out.pairs.size()) {
        EndpointId a = src[r], b = dst[r];
        if (eps.Addr(b) < eps.Addr(a)) std::swap(a, b);  // a is the pair's lower address
        out.pairs.push_back({a, b, job_of[src[r]]});
      }
      pair_of_run_pair[k].push_back(p);
    }
    run_pairs[k] = RunPairs();
  }
  // The first run's pairs were numbered first: already right.
  ParallelFor(runs - 1, threads, [&](size_t k) {
    const std::vector<uint32_t>& to = pair_of_run_pair[k + 1];
    for (size_t r = cut[k + 1]; r < cut[k + 2]; ++r)
      if (out.pair_of_row[r] != PairKeyMap::kNone) out.pair_of_row[r] = to[out.pair_of_row[r]];
  });
  return out;
}

// Rows listed per pair (a counting sort, 4 bytes per row), each pair's list fed to its builder
// on its own, the pairs spread over the threads. Each run counts and places its own rows: a
// run's rows of a pair go after the earlier runs' rows of that pair, so each list is in row
// order. Frees `numbering->pair_of_row` once the lists are made.
void FeedPerPair(const flow::FlowTable& flows, const std::vector<size_t>& cut,
                 const TransferOptions& options, int threads, PairNumbering* numbering,
                 std::vector<TransferBuilder>* builders) {
  const auto src = flows.src();
  const size_t runs = cut.size() - 1, num_pairs = numbering->pairs.size();
  BigVector<uint32_t>& pair_of_row = numbering->pair_of_row;
  std::vector<std::vector<size_t>> fill(runs, std::vector<size_t>(num_pairs, 0));
  ParallelFor(runs, threads, [&](size_t k) {
    for (size_t r = cut[k]; r < cut[k + 1]; ++r)
      if (pair_of_row[r] != PairKeyMap::kNone) ++fill[k][pair_of_row[r]];
  });
  std::vector<size_t> first(num_pairs + 1, 0);
  for (size_t p = 0; p < num_pairs; ++p) {
    size_t at = first[p];
    for (size_t k = 0; k < runs; ++k) at += std::exchange(fill[k][p], at);
    first[p + 1] = at;
  }
  // Not zeroed first: every slot is written below (a pass over 4 bytes per row saved). A kept
  // block: the pages pair_of_row's or the sort's buffers left.
  const BigArray<flow::RowId> rows(first.back());
  ParallelFor(runs, threads, [&](size_t k) {
    for (flow::RowId r = flow::RowId(cut[k]); r < cut[k + 1]; ++r)
      if (pair_of_row[r] != PairKeyMap::kNone) rows[fill[k][pair_of_row[r]]++] = r;
  });
  std::vector<std::vector<size_t>>().swap(fill);
  BigVector<uint32_t>().swap(pair_of_row);
  // The transfers now grow on the heap, in blocks of their own: what is kept of the earlier
  // stages' buffers would sit beside them at this stage's peak.
  ReleaseBigBlocks();
  const size_t last_row = first.back() == 0 ? 0 : first.back() - 1;
  ParallelFor(num_pairs, threads, [&](size_t p) {
    // The pair is built on the thread's stack and moved into place once: pairs are handed out
    // one at a time, so two threads build neighbouring pairs, whose builders share cache lines
    // in the array; every record writes to its builder, and the line then bounced between the
    // cores on each record (two threads took twice one thread's CPU here, for the same wall).
    TransferBuilder b;
    // The pair's transfers grow in a buffer kept by the thread from pair to pair, then are
    // copied at their exact size: one allocation per pair, where growing each pair's own list
    // by doubling took several (and a copy each), and its slack had to be trimmed at the end
    // (millions of lists kept up to twice their size at this stage's peak otherwise).
    thread_local std::vector<Transfer> buffer;
    std::vector<Transfer>& transfers = b.result().transfers;
    buffer.clear();
    transfers.swap(buffer);
    for (size_t k = first[p]; k < first[p + 1]; ++k) {
      // A pair's rows are spread over the window: each misses the cache (core/prefetch.h).
      flows.PrefetchRow(rows[std::min(k + kPrefetchAhead, last_row)]);
      b.Add(flows, rows[k], src[rows[k]] == numbering->pairs[p].a, options);
    }
    transfers.swap(buffer);
    transfers.assign(buffer.begin(), buffer.end());
    (*builders)[p] = std::move(b);
  });
}

// The one pass over the rows in time order on `threads` threads, each feeding the pairs whose
// number is its own modulo `threads` (pairs are numbered by first row, so each thread gets about
// as many rows): each pair still sees all its rows in row order, so its transfers are the one
// pass's. A row's pair is read from `numbering->pair_of_row` instead of being looked up again,
// which would hash every row once per thread. So it stays live while the transfers grow, in 2
// bytes per row when the pairs are that few (this route takes at most single_pass_max_pairs):
// paper, columns 44 + 2 + transfers ~9 bytes per record, under the sort's 62. Each thread's
// builders are its own: side by side in one array, two threads' builders share cache lines, and
// every record writes to its builder.
void FeedInOnePassOnThreads(const flow::FlowTable& flows, const TransferOptions& options,
                            int threads, PairNumbering* numbering,
                            std::vector<TransferBuilder>* builders) {
  const auto src = flows.src();
  const std::vector<GpuPair>& pairs = numbering->pairs;
  const size_t n = flows.size();
  const uint32_t parts = uint32_t(threads);
  auto feed = [&](const auto* pair_of_row, uint32_t none) {
    ParallelFor(parts, threads, [&](size_t k) {
      std::vector<TransferBuilder> mine((pairs.size() + parts - 1 - k) / parts);
      for (flow::RowId r = 0; r < n; ++r) {
        const uint32_t p = pair_of_row[r];
        if (p == none || p % parts != k) continue;
        mine[p / parts].Add(flows, r, src[r] == pairs[p].a, options);
      }
      for (size_t i = 0; i < mine.size(); ++i) (*builders)[i * parts + k] = std::move(mine[i]);
    });
  };
  if (pairs.size() < UINT16_MAX) {
    BigArray<uint16_t> narrow(n);
    ParallelFor(parts, threads, [&](size_t k) {
      for (size_t r = n * k / parts; r < n * (k + 1) / parts; ++r) {
        const uint32_t p = numbering->pair_of_row[r];
        narrow[r] = p == PairKeyMap::kNone ? UINT16_MAX : uint16_t(p);
      }
    });
    BigVector<uint32_t>().swap(numbering->pair_of_row);
    ReleaseBigBlocks();  // as FeedPerPair does before the transfers grow
    feed(narrow.data(), UINT16_MAX);
  } else {
    ReleaseBigBlocks();
    feed(numbering->pair_of_row.data(), PairKeyMap::kNone);
    BigVector<uint32_t>().swap(numbering->pair_of_row);
  }
}

// The pairs and their transfers in address order (a's, then b's), the builders emptied.
PairsTransfers InAddressOrder(const flow::FlowTable& flows, const std::vector<GpuPair>& pairs,
                              std::vector<TransferBuilder>* builders) {
  const auto& eps = flows.endpoints();
  std::vector<uint32_t> order(pairs.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const GpuPair &px = pairs[x], &py = pairs[y];
    if (eps.Addr(px.a) != eps.Addr(py.a)) return eps.Addr(px.a) < eps.Addr(py.a);
    return eps.Addr(px.b) < eps.Addr(py.b);
  });
  PairsTransfers out;
  out.pairs.reserve(pairs.size());
  out.transfers.reserve(pairs.size());
  for (uint32_t i : order) {
    out.pairs.push_back(pairs[i]);
    out.transfers.push_back(std::move((*builders)[i].result()));
    out.transfers.back().transfers.shrink_to_fit();
    (*builders)[i] = TransferBuilder();  // free the QP lists as we go
  }
  return out;
}

}  // namespace

PairsTransfers BuildAllTransfers(const flow::FlowTable& flows, const std::vector<int>& job_of,
                                 const TransferOptions& options, int threads,
                                 RowPairs* row_pairs) {
  const auto src = flows.src(), dst = flows.dst();
  const size_t runs = size_t(std::max(1, std::min<int>(threads, int(flows.size() / 65536) + 1)));
  std::vector<size_t> cut(runs + 1);
  for (size_t k = 0; k <= runs; ++k) cut[k] = flows.size() * k / runs;
  PairNumbering numbering = [&] {
    if (row_pairs == nullptr)
      return NumberPairs(flows, job_of, NumberRowPairs(src, dst, threads), cut, threads);
    PairNumbering n = NumberPairs(flows, job_of, *row_pairs, cut, threads);
    BigVector<uint32_t>().swap(row_pairs->key_of_row);  // not live while the transfers grow
    return n;
  }();
  const std::vector<GpuPair>& pairs = numbering.pairs;
  std::vector<TransferBuilder> builders(pairs.size());
  // While every pair's builder fits the cache, one pass over the rows in time order feeds them
  // (the columns are read sequentially): with threads, each thread feeds its share of the pairs
  // (FeedInOnePassOnThreads); on one, each row's pair is looked up again in the small pair map,
  // pair_of_row freed first, so its 4 bytes per row and the growing transfers are not live
  // together (they were the analysis's memory peak). A 100,000-GPU window has millions of pairs:
  // then random builder updates miss the cache on every record, so rows are first listed per
  // pair (FeedPerPair). Either way each pair sees its rows in time order: the same transfers.
  if (pairs.size() <= options.single_pass_max_pairs && runs > 1) {
    FeedInOnePassOnThreads(flows, options, int(runs), &numbering, &builders);
  } else if (pairs.size() <= options.single_pass_max_pairs) {
    BigVector<uint32_t>().swap(numbering.pair_of_row);
    ReleaseBigBlocks();  // as FeedPerPair does before the transfers grow
    for (flow::RowId r = 0; r < flows.size(); ++r) {
      const int j = job_of[src[r]];
      if (j < 0 || j != job_of[dst[r]] || src[r] == dst[r]) continue;
      const uint32_t p = numbering.index.Find(PairKey(src[r], dst[r]));
      if (p != PairKeyMap::kNone) builders[p].Add(flows, r, src[r] == pairs[p].a, options);
    }
  } else {
    FeedPerPair(flows, cut, options, threads, &numbering, &builders);
  }
  return InAddressOrder(flows, pairs, &builders);
}

}  // namespace prism::analysis
