// File: scaleout/record_batch.h
// The unit collectors hand to analysers when they run apart (docs/scale-out.md): a batch of flow
// records in columns, zstd-compressed. A record's observation point travels by name (a process's
// PointId means nothing in another), each name once per batch. Every field of FlowRecord is
// kept, so an analyser reading batches builds the same flow table a collector-and-analyser in one
// process would.
//
// Layout, little-endian: "LPRB", version (1 byte), 3 zero bytes, records (u32), point names (u32),
// uncompressed body bytes (u32), then the zstd frame of the body: the point names (u16 length +
// bytes each), then one column per field, records entries each, in FlowRecord's order
// (start_ns, end_ns, src, dst as 16 bytes, src_port, dst_port, proto, qp, bytes, packets,
// sampling_rate, point as an index into the names or 0xFFFFFFFF).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/status.h"

namespace prism::scaleout {

inline constexpr uint32_t kNoPointIndex = 0xFFFFFFFF;

class RecordBatchWriter {
 public:
  // `point_name` empty: the record has no observation point.
  void Add(const FlowRecord& record, std::string_view point_name);
  size_t size() const { return records_.size(); }
  // The batch's bytes; the writer is empty again afterwards.
  std::string Finish(int zstd_level = 1);

 private:
  std::vector<FlowRecord> records_;  // point = index into names_
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> index_of_;
};

struct RecordBatch {
  std::vector<FlowRecord> records;  // point = index into point_names, or kNoPoint
  std::vector<std::string> point_names;
};

// Errors name the byte offset in `bytes` and what was expected there.
StatusOr<RecordBatch> DecodeRecordBatch(std::span<const uint8_t> bytes);

// A batch decoded with its records' points renumbered into `points` (the batch's point names
// interned there), as every reader of a stream delivers them: record.point is then an id of
// `points` or kNoPoint. Errors as DecodeRecordBatch.
StatusOr<RecordBatch> DecodeRecordBatchInto(std::span<const uint8_t> bytes, PointTable* points);

}  // namespace prism::scaleout
