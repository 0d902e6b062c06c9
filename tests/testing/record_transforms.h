// File: tests/testing/record_transforms.h
// Metamorphic transforms of flow records, for tests that check an answer does not depend on how
// the telemetry cut the traffic into records. What one record stands for differs by exporter and
// setting (one RDMA message, a QP's packets until an active or idle timeout, a TCP flowlet, a
// 1-in-N packet sample); the same traffic seen through another setting must give the same jobs,
// labels, layouts and step times, as long as a record still ends inside the idle gap it stands
// beside (a record spanning a step boundary hides the boundary from any method).
//   SplitRecords  an exporter's active timeout: every record longer than `max_ns` is cut into
//                 pieces of at most `max_ns`, bytes and packets shared in proportion to time.
//   MergeRecords  a longer idle timeout (flowlet gap): consecutive records of one flow (src, dst,
//                 ports, protocol, QP, observation point) whose idle gap is at most `gap_ns` become
//                 one record.
//   SampleRecords 1-in-N packet sampling: each record keeps Binomial(packets, 1/N) of its
//                 packets (uniform in its span), reported with sampling_rate N and the bytes of the
//                 kept packets; a record that keeps none is gone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "core/flow_record.h"
#include "flow/flow_table.h"

namespace prism::testing {

// Collects the records a source emits.
class RecordCollector : public FlowSink {
 public:
  void OnRecord(const FlowRecord& r) override { records.push_back(r); }
  std::vector<FlowRecord> records;
};

inline std::vector<FlowRecord> SplitRecords(const std::vector<FlowRecord>& in, int64_t max_ns) {
  std::vector<FlowRecord> out;
  out.reserve(in.size());
  for (const FlowRecord& r : in) {
    const int64_t span = r.end_ns - r.start_ns;
    if (span <= max_ns) {
      out.push_back(r);
      continue;
    }
    const int64_t pieces = (span + max_ns - 1) / max_ns;
    uint64_t bytes_left = r.bytes, packets_left = r.packets;
    for (int64_t k = 0; k < pieces; ++k) {
      FlowRecord p = r;
      p.start_ns = r.start_ns + k * max_ns;
      p.end_ns = std::min(r.end_ns, p.start_ns + max_ns);
      const double share = double(p.end_ns - p.start_ns) / double(span);
      const bool last = k + 1 == pieces;
      p.bytes = last ? bytes_left : std::min<uint64_t>(bytes_left, uint64_t(double(r.bytes) * share));
      p.packets =
          last ? packets_left : std::min<uint64_t>(packets_left, uint64_t(double(r.packets) * share));
      bytes_left -= p.bytes;
      packets_left -= p.packets;
      if (p.bytes > 0) out.push_back(p);
    }
  }
  return out;
}

inline std::vector<FlowRecord> MergeRecords(std::vector<FlowRecord> in, int64_t gap_ns) {
  using Key = std::tuple<IpAddr, IpAddr, uint16_t, uint16_t, uint8_t, uint32_t, PointId>;
  std::stable_sort(in.begin(), in.end(), [](const FlowRecord& x, const FlowRecord& y) {
    return x.start_ns < y.start_ns;
  });
  std::map<Key, size_t> open;  // flow -> index in out of its last record
  std::vector<FlowRecord> out;
  out.reserve(in.size());
  for (const FlowRecord& r : in) {
    const Key key{r.src, r.dst, r.src_port, r.dst_port, r.proto, r.qp, r.point};
    auto it = open.find(key);
    if (it != open.end() && r.start_ns - out[it->second].end_ns <= gap_ns) {
      FlowRecord& m = out[it->second];
      m.end_ns = std::max(m.end_ns, r.end_ns);
      m.bytes += r.bytes;
      m.packets += r.packets;
      continue;
    }
    open[key] = out.size();
    out.push_back(r);
  }
  return out;
}

inline std::vector<FlowRecord> SampleRecords(const std::vector<FlowRecord>& in, uint32_t n,
                                             uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<FlowRecord> out;
  for (const FlowRecord& r : in) {
    const uint64_t packets = std::max<uint64_t>(1, r.packets);
    std::binomial_distribution<uint64_t> kept_of(packets, 1.0 / double(n));
    const uint64_t kept = kept_of(rng);
    if (kept == 0) continue;
    FlowRecord s = r;
    std::uniform_int_distribution<int64_t> at(r.start_ns, r.end_ns);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint64_t i = 0; i < std::min<uint64_t>(kept, 64); ++i) {
      const int64_t t = at(rng);
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    if (kept > 64) lo = r.start_ns, hi = r.end_ns;  // 64 uniform draws already span it
    s.start_ns = lo;
    s.end_ns = hi;
    s.packets = kept;
    s.bytes = std::max<uint64_t>(1, r.bytes * kept / packets);
    s.sampling_rate = r.sampling_rate * n;
    out.push_back(s);
  }
  return out;
}

// The records of a table (ports and protocol are not columns: they come back as 0).
inline std::vector<FlowRecord> RecordsOf(const flow::FlowTable& t) {
  std::vector<FlowRecord> out(t.size());
  for (size_t r = 0; r < t.size(); ++r) {
    FlowRecord& x = out[r];
    x.start_ns = t.start_ns()[r];
    x.end_ns = t.EndNs(r);
    x.src = t.endpoints().Addr(t.src()[r]);
    x.dst = t.endpoints().Addr(t.dst()[r]);
    x.bytes = t.Bytes(r);
    x.packets = std::max<uint64_t>(1, x.bytes / 4096);
    x.qp = t.has_transfer_columns() ? t.qp()[r] : 0;
    x.sampling_rate = t.has_transfer_columns() ? t.SamplingRate(r) : 1;
    x.point = t.point()[r];
    x.proto = 17;
    x.dst_port = 4791;
  }
  return out;
}

}  // namespace prism::testing
