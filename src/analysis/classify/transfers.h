// File: analysis/classify/transfers.h
// A GPU pair's records, grouped into transfers. What one record stands for depends on the source
// (one RDMA message, a QP's packets until an exporter timeout, one channel's share of a
// collective), so records of one direction that start within `group_ns` of each other — the QPs
// of one send, the channels of one ring step — become one transfer with their bytes summed. Small
// control writes (NCCL clear-to-send, ready notifications) are counted, not transfers. Records a
// collector cut from one flow by its active timeout (back to back on one QP) are joined again.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/name_table.h"
#include "flow/flow_table.h"

namespace prism::analysis {

struct TransferOptions {
  uint64_t control_max_bytes = 4096;  // one MTU: a record this small carries no tensor data
  int64_t group_ns = 1'000'000;  // wide enough for clock skew between the switches that saw each QP
  // A record of a QP starting less than this after the QP's previous record ended continues it
  // (an exporter's active timeout split the flow); a new message on the QP starts later than that.
  int64_t continuation_ns = 1'000;
  // Up to this many pairs, every pair's builder is fed in one pass over the rows (they stay in
  // the cache); above it, rows are listed per pair first. Same transfers either way.
  size_t single_pass_max_pairs = 16384;
};

struct Transfer {
  int64_t start_ns = 0, end_ns = 0;
  uint64_t bytes = 0;
  uint32_t records = 0;
  bool from_a = true;  // direction: a -> b (a is the pair's lower address)
};

// An unordered GPU pair of one job; a is the lower address.
struct GpuPair {
  EndpointId a = 0, b = 0;
  int job = -1;
};

struct PairTransfers {
  std::vector<Transfer> transfers;  // by start
  uint32_t data_records = 0;
  uint32_t control_records = 0;
};

// Turns one pair's records, fed in time order, into transfers.
class TransferBuilder {
 public:
  TransferBuilder();
  ~TransferBuilder();
  TransferBuilder(TransferBuilder&&) noexcept;
  TransferBuilder& operator=(TransferBuilder&&) noexcept;

  void Add(const flow::FlowTable& flows, flow::RowId r, bool from_a, const TransferOptions& options);
  PairTransfers& result() { return out_; }

 private:
  struct QpLast;
  struct QpIndex;
  QpLast* FindQp(int dir, uint32_t qp);

  PairTransfers out_;
  long open_[2] = {-1, -1};  // the open transfer of each direction, or -1
  std::vector<QpLast> last_of_qp_[2];
  size_t hint_[2] = {0, 0};
  std::unique_ptr<QpIndex> index_;  // only for pairs with very many QPs
};

// Every pair whose two endpoints belong to the same job, ordered by (a, b) address, with its
// transfers. See BuildAllTransfers in transfers.cc for how the rows reach each pair's builder.
struct PairsTransfers {
  std::vector<GpuPair> pairs;
  std::vector<PairTransfers> transfers;  // aligned with pairs
};
PairsTransfers BuildAllTransfers(const flow::FlowTable& flows, const std::vector<int>& job_of,
                                 const TransferOptions& options, int threads = 1);

}  // namespace prism::analysis
