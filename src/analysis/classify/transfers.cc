#include "analysis/classify/transfers.h"

#include <algorithm>
#include <utility>

#include "analysis/jobs/job_recognition.h"
#include "analysis/pair_key_map.h"
#include "analysis/parallel_for.h"

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

PairsTransfers BuildAllTransfers(const flow::FlowTable& flows, const std::vector<int>& job_of,
                                 const TransferOptions& options, int threads) {
  const auto src = flows.src(), dst = flows.dst();
  const auto& eps = flows.endpoints();
  // The rows between two GPUs of one job, cut into one run per thread. Each run numbers its pairs
  // in the order of their first row; the runs' pairs are then numbered in run order, so a pair's
  // number is the order of its first row over all rows, as one pass would give.
  const size_t runs = size_t(std::max(1, std::min<int>(threads, int(flows.size() / 65536) + 1)));
  std::vector<size_t> cut(runs + 1);
  for (size_t k = 0; k <= runs; ++k) cut[k] = flows.size() * k / runs;
  std::vector<uint32_t> pair_of_row(flows.size(), PairKeyMap::kNone);
  struct RunPairs {
    PairKeyMap index;
    std::vector<flow::RowId> first_row;
  };
  std::vector<RunPairs> run_pairs(runs);
  ParallelFor(runs, threads, [&](size_t k) {
    RunPairs& rp = run_pairs[k];
    for (flow::RowId r = flow::RowId(cut[k]); r < cut[k + 1]; ++r) {
      const int j = job_of[src[r]];
      if (j < 0 || j != job_of[dst[r]] || src[r] == dst[r]) continue;
      const uint32_t p = rp.index.FindOrInsert(PairKey(src[r], dst[r]));
      if (p == rp.first_row.size()) rp.first_row.push_back(r);
      pair_of_row[r] = p;
    }
  });
  PairKeyMap index;
  std::vector<GpuPair> pairs;
  std::vector<std::vector<uint32_t>> pair_of_run_pair(runs);
  for (size_t k = 0; k < runs; ++k) {
    for (flow::RowId r : run_pairs[k].first_row) {
      const uint32_t p = index.FindOrInsert(PairKey(src[r], dst[r]));
      if (p == pairs.size()) {
        EndpointId a = src[r], b = dst[r];
        if (eps.Addr(b) < eps.Addr(a)) std::swap(a, b);  // a is the pair's lower address
        pairs.push_back({a, b, job_of[src[r]]});
      }
      pair_of_run_pair[k].push_back(p);
    }
    run_pairs[k] = RunPairs();
  }
  // The first run's pairs were numbered first: already right.
  ParallelFor(runs - 1, threads, [&](size_t k) {
    const std::vector<uint32_t>& to = pair_of_run_pair[k + 1];
    for (size_t r = cut[k + 1]; r < cut[k + 2]; ++r)
      if (pair_of_row[r] != PairKeyMap::kNone) pair_of_row[r] = to[pair_of_row[r]];
  });
  std::vector<std::vector<uint32_t>>().swap(pair_of_run_pair);
  std::vector<TransferBuilder> builders(pairs.size());
  // While every pair's builder fits the cache, one pass over the rows in time order feeds them
  // (the columns are read sequentially), looking each row's pair up again in the small pair map:
  // pair_of_row is freed first, so its 4 bytes per row and the growing transfers are not live
  // together (they were the analysis's memory peak). A 100,000-GPU window has millions of pairs:
  // then random builder updates miss the cache on every record, so rows are first listed per
  // pair (a counting sort, 4 bytes per row, row order kept) and each pair's list is fed on its
  // own, the pairs spread over the threads. Either way each pair sees its rows in time order:
  // the same transfers.
  if (pairs.size() <= options.single_pass_max_pairs) {
    std::vector<uint32_t>().swap(pair_of_row);
    // The pair of a row, kNone when the row is not between two GPUs of one job.
    auto find_pair = [&](flow::RowId r) -> uint32_t {
      const int j = job_of[src[r]];
      if (j < 0 || j != job_of[dst[r]] || src[r] == dst[r]) return PairKeyMap::kNone;
      return index.Find(PairKey(src[r], dst[r]));
    };
    for (flow::RowId r = 0; r < flows.size(); ++r) {
      const uint32_t p = find_pair(r);
      if (p != PairKeyMap::kNone) builders[p].Add(flows, r, src[r] == pairs[p].a, options);
    }
  } else {
    // A counting sort of the rows by pair, each run counting and placing its own rows: a run's
    // rows of a pair go after the earlier runs' rows of that pair, so each list is in row order.
    std::vector<std::vector<size_t>> fill(runs, std::vector<size_t>(pairs.size(), 0));
    ParallelFor(runs, threads, [&](size_t k) {
      for (size_t r = cut[k]; r < cut[k + 1]; ++r)
        if (pair_of_row[r] != PairKeyMap::kNone) ++fill[k][pair_of_row[r]];
    });
    std::vector<size_t> first(pairs.size() + 1, 0);
    for (size_t p = 0; p < pairs.size(); ++p) {
      size_t at = first[p];
      for (size_t k = 0; k < runs; ++k) at += std::exchange(fill[k][p], at);
      first[p + 1] = at;
    }
    std::vector<flow::RowId> rows(first.back());
    ParallelFor(runs, threads, [&](size_t k) {
      for (flow::RowId r = flow::RowId(cut[k]); r < cut[k + 1]; ++r)
        if (pair_of_row[r] != PairKeyMap::kNone) rows[fill[k][pair_of_row[r]]++] = r;
    });
    std::vector<std::vector<size_t>>().swap(fill);
    std::vector<uint32_t>().swap(pair_of_row);
    ParallelFor(pairs.size(), threads, [&](size_t p) {
      for (size_t k = first[p]; k < first[p + 1]; ++k)
        builders[p].Add(flows, rows[k], src[rows[k]] == pairs[p].a, options);
      // Done with this pair: drop its list's growth slack now, not after every pair is done
      // (millions of lists grown by doubling kept up to twice their size at this stage's peak).
      builders[p].result().transfers.shrink_to_fit();
    });
  }
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
    out.transfers.push_back(std::move(builders[i].result()));
    out.transfers.back().transfers.shrink_to_fit();
    builders[i] = TransferBuilder();  // free the QP lists as we go
  }
  return out;
}

}  // namespace prism::analysis
