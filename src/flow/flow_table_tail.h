// File: flow/flow_table_tail.h
// Rows that follow a FlowTable's, taken on another thread straight into the table's reserved
// capacity past its end (a run of a file read apart: pipeline/ipfix_read_on_threads.h), so that
// appending them later moves them within pages already touched instead of copying them from a
// table of their own into fresh ones. A tail has room for a bound on its rows fixed when it is
// made (FlowTable::MakeTails); its endpoints get ids of its own, in first-appearance order, mapped
// to the table's when FlowTable::AppendTail takes the rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/big_blocks.h"
#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/record_batch.h"
#include "flow/endpoint_cache.h"

namespace prism::flow {

class FlowTableTail : public FlowSink, public BatchSink {
 public:
  // Rows beyond the room it was given are a broken bound: checked, the process stops (writing on
  // would overwrite the next tail's rows).
  void OnRecord(const FlowRecord& r) override;
  void OnBatch(RecordBatch* batch) override;

  size_t size() const { return rows_; }

 private:
  friend class FlowTable;
  // Where row 0 of the tail goes in each of the table's columns.
  struct Columns {
    int64_t* start_ns = nullptr;
    uint32_t* duration_low = nullptr;
    EndpointId *src = nullptr, *dst = nullptr;
    uint32_t* bytes_low = nullptr;
    uint32_t* qp = nullptr;
    PointId* point = nullptr;
  };

  FlowTableTail(size_t first_row, size_t room, const Columns& at)
      : first_row_(first_row), room_(room), at_(at) {}
  void TakeRows(size_t n);  // checks room for n more rows

  size_t first_row_;  // in the table's columns
  size_t room_;
  Columns at_;
  size_t rows_ = 0;
  EndpointTable endpoints_;
  EndpointCache endpoint_cache_;
  // The lazy columns, apart from the table's: the table holds none until a record needs one, so
  // there is no room past its end to write them into (flow/lazy_column.h).
  BigVector<uint32_t> sampling_rate_, bytes_high_, duration_high_;
  int64_t min_start_ns_ = INT64_MAX, max_end_ns_ = INT64_MIN;
};

}  // namespace prism::flow
