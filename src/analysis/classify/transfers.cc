#include "analysis/classify/transfers.h"

#include <algorithm>

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
  const uint64_t b = bytes * std::max<uint32_t>(1, flows.sampling_rate()[r]);
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
  PairKeyMap index;
  std::vector<GpuPair> pairs;
  std::vector<uint32_t> pair_of_row(flows.size(), PairKeyMap::kNone);
  for (flow::RowId r = 0; r < flows.size(); ++r) {
    const int j = job_of[src[r]];
    if (j < 0 || j != job_of[dst[r]] || src[r] == dst[r]) continue;
    const uint32_t p = index.FindOrInsert(PairKey(src[r], dst[r]));
    if (p == pairs.size()) {
      EndpointId a = src[r], b = dst[r];
      if (eps.Addr(b) < eps.Addr(a)) std::swap(a, b);  // a is the pair's lower address
      pairs.push_back({a, b, j});
    }
    pair_of_row[r] = p;
  }
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
    std::vector<size_t> first(pairs.size() + 1, 0);
    for (uint32_t p : pair_of_row)
      if (p != PairKeyMap::kNone) ++first[p + 1];
    for (size_t p = 0; p < pairs.size(); ++p) first[p + 1] += first[p];
    std::vector<flow::RowId> rows(first.back());
    {
      std::vector<size_t> fill(first.begin(), first.end() - 1);
      for (flow::RowId r = 0; r < flows.size(); ++r)
        if (pair_of_row[r] != PairKeyMap::kNone) rows[fill[pair_of_row[r]]++] = r;
    }
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
