#include "analysis/classify/transfers.h"

#include <algorithm>
#include <unordered_map>

namespace prism::analysis {

std::vector<PairRows> GroupRowsByPair(const flow::FlowTable& flows,
                                      const std::vector<int>& job_of) {
  const auto src = flows.src(), dst = flows.dst();
  std::vector<std::pair<uint64_t, flow::RowId>> keyed;
  keyed.reserve(flows.size());
  for (flow::RowId r = 0; r < flows.size(); ++r) {
    int j = job_of[src[r]];
    if (j < 0 || j != job_of[dst[r]] || src[r] == dst[r]) continue;
    EndpointId a = src[r], b = dst[r];
    if (flows.endpoints().Addr(b) < flows.endpoints().Addr(a)) std::swap(a, b);
    keyed.push_back({(uint64_t(a) << 32) | b, r});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<PairRows> out;
  for (size_t i = 0; i < keyed.size();) {
    PairRows p;
    p.a = EndpointId(keyed[i].first >> 32);
    p.b = EndpointId(keyed[i].first);
    p.job = job_of[p.a];
    size_t j = i;
    while (j < keyed.size() && keyed[j].first == keyed[i].first) p.rows.push_back(keyed[j++].second);
    out.push_back(std::move(p));
    i = j;
  }
  const auto& eps = flows.endpoints();
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
