// File: core/record_batch.h
// Records in columns, a batch at a time: exactly the fields the columnar FlowTable keeps (times,
// endpoint addresses, bytes, QP, point, sampling rate) and none of the others (ports, protocol,
// packets). A decoder that knows a template's layout fills one of these per data set in a tight
// loop and hands it over in one call (BatchSink::OnBatch), instead of building a FlowRecord and
// making a virtual call per record through every sink in the chain. Sits between the ingest
// decoders and the FlowTable (flow/flow_table.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/flow_record.h"
#include "core/ip_addr.h"

namespace prism {

struct RecordBatch {
  // The batch's rows are [0, size); the columns may be longer (capacity kept between batches, so
  // a decoder writes rows by index without a capacity check per field).
  size_t size = 0;
  std::vector<int64_t> start_ns, end_ns;
  std::vector<IpAddr> src, dst;
  std::vector<uint64_t> bytes;
  std::vector<uint32_t> qp;
  std::vector<PointId> point;
  std::vector<uint32_t> sampling_rate;

  // Makes every column hold at least `rows` rows (never shrinks).
  void Reserve(size_t rows) {
    if (start_ns.size() >= rows) return;
    start_ns.resize(rows);
    end_ns.resize(rows);
    src.resize(rows);
    dst.resize(rows);
    bytes.resize(rows);
    qp.resize(rows);
    point.resize(rows);
    sampling_rate.resize(rows);
  }

  // Drops the rows `drop(i)` is true for, keeping the others in order; returns how many went.
  template <typename Drop>
  size_t RemoveIf(Drop drop) {
    // Rows up to the first dropped one stay where they are: most batches drop none, and then
    // this is the only loop (the duration filter calls this on every batch).
    // Row `kept` is then the first dropped one, asked once; every later kept row moves down.
    size_t kept = 0;
    while (kept < size && !drop(kept)) ++kept;
    for (size_t i = kept + 1; i < size; ++i) {
      if (drop(i)) continue;
      MoveRow(i, kept);
      ++kept;
    }
    const size_t removed = size - kept;
    size = kept;
    return removed;
  }

 private:
  void MoveRow(size_t from, size_t to) {
    start_ns[to] = start_ns[from];
    end_ns[to] = end_ns[from];
    src[to] = src[from];
    dst[to] = dst[from];
    bytes[to] = bytes[from];
    qp[to] = qp[from];
    point[to] = point[from];
    sampling_rate[to] = sampling_rate[from];
  }
};

// The batch side of a FlowSink that keeps only a RecordBatch's fields (the FlowTable, and the
// filters in front of it). Sinks that need ports, protocol or packets have none: they get every
// record through FlowSink::OnRecord as before.
class BatchSink {
 public:
  virtual ~BatchSink() = default;
  // A filter takes batches only if what it forwards to does.
  virtual bool TakesBatches() const { return true; }
  // Rows [0, batch->size) of `batch`, in order, as OnRecord would have had them one by one; the
  // sink may change the batch (a filter drops rows in place).
  virtual void OnBatch(RecordBatch* batch) = 0;
};

// `sink`'s batch side when it takes batches, else null. A capability asked once per decoder (and
// per filter), not per record; FlowSink itself stays as every source and sink knows it.
inline BatchSink* BatchSideOf(FlowSink* sink) {
  auto* side = dynamic_cast<BatchSink*>(sink);
  return side != nullptr && side->TakesBatches() ? side : nullptr;
}

}  // namespace prism
