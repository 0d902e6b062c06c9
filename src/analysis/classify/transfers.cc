#include "analysis/classify/transfers.h"

#include <algorithm>
#include <unordered_map>

#include "analysis/jobs/job_recognition.h"
#include "analysis/pair_key_map.h"
#include "analysis/parallel_for.h"

namespace prism::analysis {

struct TransferBuilder::QpLast {
  uint32_t qp;
  int64_t end_ns;
  long transfer;
};

struct TransferBuilder::QpIndex {
  std::unordered_map<uint32_t, size_t> of_qp[2];
};

// Where each QP's last record ended, per direction: an exporter's active timeout cuts one long
// flow into records that follow each other back to back on the same QP. A pair carries a handful
// of QPs (NCCL channels, PP sends split over QPs), so a flat list searched from the last hit
// beats a hash map: this runs once per record. Past kMaxScan QPs (not seen in training traffic,
// but a tool must not go quadratic on odd input) an index takes over.
constexpr size_t kMaxScan = 64;

TransferBuilder::TransferBuilder() = default;
TransferBuilder::~TransferBuilder() = default;
TransferBuilder::TransferBuilder(TransferBuilder&&) noexcept = default;
TransferBuilder& TransferBuilder::operator=(TransferBuilder&&) noexcept = default;

TransferBuilder::QpLast* TransferBuilder::FindQp(int dir, uint32_t qp) {
  std::vector<QpLast>& v = last_of_qp_[dir];
  const size_t n = v.size();
  if (n > kMaxScan) {
    auto it = index_->of_qp[dir].find(qp);
    return it == index_->of_qp[dir].end() ? nullptr : &v[it->second];
  }
  for (size_t k = 0; k < n; ++k) {
    size_t i = hint_[dir] + k;
    if (i >= n) i -= n;
    if (v[i].qp == qp) {
      hint_[dir] = i;
      return &v[i];
    }
  }
  return nullptr;
}

void TransferBuilder::Add(const flow::FlowTable& flows, flow::RowId r, bool from_a,
                          const TransferOptions& options) {
  const uint64_t bytes = flows.bytes()[r];
  if (bytes <= options.control_max_bytes) {
    ++out_.control_records;
    return;
  }
  ++out_.data_records;
  const int64_t start = flows.start_ns()[r], end = flows.end_ns()[r];
  const uint32_t qp = flows.qp()[r];
  const int dir = from_a ? 0 : 1;
  long& o = open_[dir];
  // Sampled records stand for sampling_rate times their bytes.
  const uint64_t b = bytes * std::max<uint32_t>(1, flows.sampling_rate()[r]);
  QpLast* cont = FindQp(dir, qp);
  long target = -1;
  if (o >= 0 && start - out_.transfers[o].start_ns <= options.group_ns) {
    target = o;
  } else if (cont != nullptr && start >= cont->end_ns &&
             start - cont->end_ns < options.continuation_ns) {
    target = cont->transfer;
  }
  if (target < 0) {
    target = static_cast<long>(out_.transfers.size());
    o = target;
    out_.transfers.push_back({start, end, b, 1, from_a});
  } else {
    Transfer& t = out_.transfers[target];
    t.end_ns = std::max(t.end_ns, end);
    t.bytes += b;
    ++t.records;
  }
  if (cont != nullptr) {
    cont->end_ns = end;
    cont->transfer = target;
    return;
  }
  std::vector<QpLast>& v = last_of_qp_[dir];
  v.push_back({qp, end, target});
  hint_[dir] = v.size() - 1;
  if (v.size() == kMaxScan + 1) {
    if (!index_) index_ = std::make_unique<QpIndex>();
    for (size_t i = 0; i < v.size(); ++i) index_->of_qp[dir][v[i].qp] = i;
  } else if (v.size() > kMaxScan + 1) {
    index_->of_qp[dir][qp] = v.size() - 1;
  }
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
