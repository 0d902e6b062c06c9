// File: analysis/classify/transfers.h
// A GPU pair's records, grouped into transfers: bursts of one direction's data. What one record
// stands for depends on the source (one RDMA message, a QP's packets until an exporter's active or
// idle timeout, one channel's share of a collective, a TCP flowlet, a packet sample), so records
// are joined by time alone: a record of one direction that starts no later than `group_ns` after
// the direction's open transfer ends (or while it is still running) continues it — the QPs of one
// send, the channels and back-to-back buckets of one collective, the pieces an active timeout cut
// from one flow. A transfer therefore does not depend on how the traffic was cut into records as
// long as the cuts fall inside bursts, and the idle gaps between bursts (compute) are what
// separates transfers. Small control writes (NCCL clear-to-send, ready notifications) are
// counted, not transfers.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/jobs/job_recognition.h"
#include "core/name_table.h"
#include "flow/flow_table.h"

namespace prism::analysis {

struct TransferOptions {
  uint64_t control_max_bytes = 4096;  // one MTU: a record this small carries no tensor data
  // The idle gap that ends a burst: wide enough for clock skew between the switches that saw each
  // QP and for a collector's per-record jitter, narrow beside a compute op (ms).
  int64_t group_ns = 1'000'000;
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
  void Add(const flow::FlowTable& flows, flow::RowId r, bool from_a, const TransferOptions& options);
  // Continues with `later`, which was fed the rows that follow this builder's (the pair's next
  // run of rows): the transfers are those of one builder fed all the rows, at their exact size.
  // `later` is left empty.
  void Append(TransferBuilder&& later, const TransferOptions& options);
  PairTransfers& result() { return out_; }

 private:
  PairTransfers out_;
  long open_[2] = {-1, -1};  // the open transfer of each direction, or -1
};

// Every pair whose two endpoints belong to the same job, ordered by (a, b) address, with its
// transfers. See BuildAllTransfers in transfers.cc for how the rows reach each pair's builder.
struct PairsTransfers {
  std::vector<GpuPair> pairs;
  std::vector<PairTransfers> transfers;  // aligned with pairs
};
// `row_pairs`: the rows' pairs from the jobs stage (NumberRowPairs), if the caller has them; its
// key_of_row is taken (turned into each row's pair in place, then freed: 4 bytes per row, not
// kept while the transfers grow). Without, they are found here.
PairsTransfers BuildAllTransfers(const flow::FlowTable& flows, const std::vector<int>& job_of,
                                 const TransferOptions& options, int threads = 1,
                                 RowPairs* row_pairs = nullptr);

}  // namespace prism::analysis
