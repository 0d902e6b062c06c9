#include "analysis/classify/transfers.h"

#include <algorithm>
#include <unordered_map>

#include "analysis/jobs/job_recognition.h"
#include "analysis/pair_key_map.h"

namespace prism::analysis {

std::vector<PairRows> GroupRowsByPair(const flow::FlowTable& flows,
                                      const std::vector<int>& job_of) {
  // A counting sort: each row gets its pair's index (hash of the pair key), then each pair's
  // rows are copied out in row order into a vector of the exact size. 4 bytes per row of
  // scratch, where sorting (pair key, row) would take 16 and O(n log n).
  const auto src = flows.src(), dst = flows.dst();
  const auto& eps = flows.endpoints();
  PairKeyMap index;
  std::vector<uint32_t> pair_of_row(flows.size());
  std::vector<uint32_t> count;
  for (flow::RowId r = 0; r < flows.size(); ++r) {
    const int j = job_of[src[r]];
    if (j < 0 || j != job_of[dst[r]] || src[r] == dst[r]) {
      pair_of_row[r] = PairKeyMap::kNone;
      continue;
    }
    const uint32_t p = index.FindOrInsert(PairKey(src[r], dst[r]));
    if (p == count.size()) count.push_back(0);
    ++count[p];
    pair_of_row[r] = p;
  }
  std::vector<PairRows> out(index.size());
  for (size_t p = 0; p < out.size(); ++p) {
    const uint64_t key = index.keys()[p];
    EndpointId a = EndpointId(key >> 32), b = EndpointId(key);
    if (eps.Addr(b) < eps.Addr(a)) std::swap(a, b);  // a is the pair's lower address
    out[p].a = a;
    out[p].b = b;
    out[p].job = job_of[a];
    out[p].rows.reserve(count[p]);
  }
  for (flow::RowId r = 0; r < flows.size(); ++r)
    if (pair_of_row[r] != PairKeyMap::kNone) out[pair_of_row[r]].rows.push_back(r);
  std::sort(out.begin(), out.end(), [&](const PairRows& x, const PairRows& y) {
    if (eps.Addr(x.a) != eps.Addr(y.a)) return eps.Addr(x.a) < eps.Addr(y.a);
    return eps.Addr(x.b) < eps.Addr(y.b);
  });
  return out;
}

PairTransfers BuildTransfers(const flow::FlowTable& flows, const PairRows& pair,
                             const TransferOptions& options) {
  PairTransfers out;
  const auto start = flows.start_ns(), end = flows.end_ns();
  const auto src = flows.src();
  const auto bytes = flows.bytes();
  const auto sampling = flows.sampling_rate();
  const auto qp = flows.qp();
  // The open transfer of each direction: index into out.transfers, or -1.
  long open[2] = {-1, -1};
  // Where each QP's last record ended, per direction: an exporter's active timeout cuts one
  // long flow into records that follow each other back to back on the same QP.
  std::unordered_map<uint32_t, std::pair<int64_t, long>> last_of_qp[2];
  for (flow::RowId r : pair.rows) {
    if (bytes[r] <= options.control_max_bytes) {
      ++out.control_records;
      continue;
    }
    ++out.data_records;
    const bool from_a = src[r] == pair.a;
    long& o = open[from_a ? 0 : 1];
    // Sampled records stand for sampling_rate times their bytes.
    const uint64_t b = bytes[r] * std::max<uint32_t>(1, sampling[r]);
    auto& qp_last = last_of_qp[from_a ? 0 : 1];
    auto cont = qp_last.find(qp[r]);
    long target = -1;
    if (o >= 0 && start[r] - out.transfers[o].start_ns <= options.group_ns) {
      target = o;
    } else if (cont != qp_last.end() && start[r] >= cont->second.first &&
               start[r] - cont->second.first < options.continuation_ns) {
      target = cont->second.second;
    }
    if (target >= 0) {
      qp_last[qp[r]] = {end[r], target};
      Transfer& t = out.transfers[target];
      t.end_ns = std::max(t.end_ns, end[r]);
      t.bytes += b;
      ++t.records;
      continue;
    }
    o = static_cast<long>(out.transfers.size());
    qp_last[qp[r]] = {end[r], o};
    out.transfers.push_back({start[r], end[r], b, 1, from_a});
  }
  return out;
}

}  // namespace prism::analysis
