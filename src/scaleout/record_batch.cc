#include "scaleout/record_batch.h"

#include <cstring>

#include <zstd.h>

namespace prism::scaleout {

namespace {

constexpr char kMagic[4] = {'L', 'P', 'R', 'B'};
constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderBytes = 20;
// Bytes per record of the columns: 8 + 8 + 16 + 16 + 2 + 2 + 1 + 4 + 8 + 8 + 4 + 4.
constexpr size_t kRecordBytes = 81;
// A collector's batch holds a few thousand records; these bound what a corrupt header can make
// the decoder allocate.
constexpr uint32_t kMaxRecords = 1u << 24;
constexpr uint32_t kMaxBodyBytes = 1u << 30;

template <typename T>
void Put(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out->append(b, sizeof(T));
}

template <typename T>
T Get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Appends one column: `get` of every record.
template <typename T, typename Get>
void PutColumn(std::string* out, const std::vector<FlowRecord>& records, Get get) {
  for (const FlowRecord& r : records) Put<T>(out, get(r));
}

template <typename T, typename Set>
const uint8_t* GetColumn(const uint8_t* p, std::vector<FlowRecord>* records, Set set) {
  for (FlowRecord& r : *records) {
    set(r, Get<T>(p));
    p += sizeof(T);
  }
  return p;
}

}  // namespace

void RecordBatchWriter::Add(const FlowRecord& record, std::string_view point_name) {
  FlowRecord r = record;
  r.point = kNoPointIndex;
  if (!point_name.empty()) {
    auto [it, added] = index_of_.try_emplace(std::string(point_name), uint32_t(names_.size()));
    if (added) names_.emplace_back(point_name);
    r.point = it->second;
  }
  records_.push_back(r);
}

std::string RecordBatchWriter::Finish(int zstd_level) {
  std::string body;
  body.reserve(records_.size() * kRecordBytes);
  for (const std::string& n : names_) {
    Put<uint16_t>(&body, static_cast<uint16_t>(std::min<size_t>(n.size(), 0xFFFF)));
    body.append(n.data(), std::min<size_t>(n.size(), 0xFFFF));
  }
  PutColumn<int64_t>(&body, records_, [](const FlowRecord& r) { return r.start_ns; });
  PutColumn<int64_t>(&body, records_, [](const FlowRecord& r) { return r.end_ns; });
  for (const FlowRecord& r : records_)
    body.append(reinterpret_cast<const char*>(r.src.bytes().data()), 16);
  for (const FlowRecord& r : records_)
    body.append(reinterpret_cast<const char*>(r.dst.bytes().data()), 16);
  PutColumn<uint16_t>(&body, records_, [](const FlowRecord& r) { return r.src_port; });
  PutColumn<uint16_t>(&body, records_, [](const FlowRecord& r) { return r.dst_port; });
  PutColumn<uint8_t>(&body, records_, [](const FlowRecord& r) { return r.proto; });
  PutColumn<uint32_t>(&body, records_, [](const FlowRecord& r) { return r.qp; });
  PutColumn<uint64_t>(&body, records_, [](const FlowRecord& r) { return r.bytes; });
  PutColumn<uint64_t>(&body, records_, [](const FlowRecord& r) { return r.packets; });
  PutColumn<uint32_t>(&body, records_, [](const FlowRecord& r) { return r.sampling_rate; });
  PutColumn<uint32_t>(&body, records_, [](const FlowRecord& r) { return r.point; });

  std::string out(kMagic, 4);
  Put<uint8_t>(&out, kVersion);
  out.append(3, '\0');
  Put<uint32_t>(&out, static_cast<uint32_t>(records_.size()));
  Put<uint32_t>(&out, static_cast<uint32_t>(names_.size()));
  Put<uint32_t>(&out, static_cast<uint32_t>(body.size()));
  const size_t header = out.size();
  out.resize(header + ZSTD_compressBound(body.size()));
  const size_t n = ZSTD_compress(out.data() + header, out.size() - header, body.data(),
                                 body.size(), zstd_level);
  out.resize(header + (ZSTD_isError(n) ? 0 : n));  // compressBound is enough: cannot fail
  records_.clear();
  names_.clear();
  index_of_.clear();
  return out;
}

StatusOr<RecordBatch> DecodeRecordBatch(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 4) != 0)
    return MakeError(ErrorCode::kDataLoss, "record batch: byte 0: expected \"LPRB\" and a "
                     "{}-byte header, got {} bytes", kHeaderBytes, bytes.size());
  if (bytes[4] != kVersion)
    return MakeError(ErrorCode::kDataLoss, "record batch: byte 4: expected version {}, got {}",
                     kVersion, bytes[4]);
  const uint32_t count = Get<uint32_t>(bytes.data() + 8);
  const uint32_t names = Get<uint32_t>(bytes.data() + 12);
  const uint32_t body_bytes = Get<uint32_t>(bytes.data() + 16);
  const size_t min_body = size_t(count) * kRecordBytes + size_t(names) * 2;
  const size_t max_body = min_body + size_t(names) * 0xFFFF;
  if (count > kMaxRecords || body_bytes > kMaxBodyBytes || body_bytes < min_body ||
      body_bytes > max_body)
    return MakeError(ErrorCode::kDataLoss, "record batch: byte 8: {} records and {} point names "
                     "cannot take {} body bytes", count, names, body_bytes);
  const unsigned long long framed =
      ZSTD_getFrameContentSize(bytes.data() + kHeaderBytes, bytes.size() - kHeaderBytes);
  if (framed != body_bytes)
    return MakeError(ErrorCode::kDataLoss, "record batch: byte {}: expected a zstd frame of {} "
                     "bytes", kHeaderBytes, body_bytes);
  std::vector<uint8_t> body(body_bytes);
  const size_t n = ZSTD_decompress(body.data(), body.size(), bytes.data() + kHeaderBytes,
                                   bytes.size() - kHeaderBytes);
  if (ZSTD_isError(n) || n != body_bytes)
    return MakeError(ErrorCode::kDataLoss, "record batch: byte {}: expected a zstd frame of {} "
                     "bytes ({})", kHeaderBytes, body_bytes,
                     ZSTD_isError(n) ? ZSTD_getErrorName(n) : "a frame of another size");
  RecordBatch batch;
  const uint8_t* p = body.data();
  const uint8_t* end = body.data() + body.size();
  for (uint32_t i = 0; i < names; ++i) {
    const size_t len = end - p >= 2 ? Get<uint16_t>(p) : SIZE_MAX;
    if (len == SIZE_MAX || size_t(end - p) < 2 + len + (names - i - 1) * 2 + count * kRecordBytes)
      return MakeError(ErrorCode::kDataLoss, "record batch body: byte {}: point name {} of {} "
                       "runs past the body", p - body.data(), i, names);
    batch.point_names.emplace_back(reinterpret_cast<const char*>(p + 2), len);
    p += 2 + len;
  }
  if (size_t(end - p) != size_t(count) * kRecordBytes)
    return MakeError(ErrorCode::kDataLoss, "record batch body: byte {}: expected {} bytes of "
                     "columns for {} records, {} left", p - body.data(),
                     size_t(count) * kRecordBytes, count, end - p);
  batch.records.resize(count);
  p = GetColumn<int64_t>(p, &batch.records, [](FlowRecord& r, int64_t v) { r.start_ns = v; });
  p = GetColumn<int64_t>(p, &batch.records, [](FlowRecord& r, int64_t v) { r.end_ns = v; });
  for (FlowRecord& r : batch.records) r.src = IpAddr::FromV6(p), p += 16;
  for (FlowRecord& r : batch.records) r.dst = IpAddr::FromV6(p), p += 16;
  p = GetColumn<uint16_t>(p, &batch.records, [](FlowRecord& r, uint16_t v) { r.src_port = v; });
  p = GetColumn<uint16_t>(p, &batch.records, [](FlowRecord& r, uint16_t v) { r.dst_port = v; });
  p = GetColumn<uint8_t>(p, &batch.records, [](FlowRecord& r, uint8_t v) { r.proto = v; });
  p = GetColumn<uint32_t>(p, &batch.records, [](FlowRecord& r, uint32_t v) { r.qp = v; });
  p = GetColumn<uint64_t>(p, &batch.records, [](FlowRecord& r, uint64_t v) { r.bytes = v; });
  p = GetColumn<uint64_t>(p, &batch.records, [](FlowRecord& r, uint64_t v) { r.packets = v; });
  p = GetColumn<uint32_t>(p, &batch.records,
                          [](FlowRecord& r, uint32_t v) { r.sampling_rate = v; });
  const uint8_t* points = p;
  p = GetColumn<uint32_t>(p, &batch.records, [](FlowRecord& r, uint32_t v) { r.point = v; });
  for (size_t i = 0; i < batch.records.size(); ++i) {
    FlowRecord& r = batch.records[i];
    if (r.point == kNoPointIndex) {
      r.point = kNoPoint;
    } else if (r.point >= names) {
      return MakeError(ErrorCode::kDataLoss, "record batch body: byte {}: record {} names point "
                       "{} of {}", points - body.data() + 4 * i, i, r.point, names);
    }
  }
  return batch;
}

StatusOr<RecordBatch> DecodeRecordBatchInto(std::span<const uint8_t> bytes, PointTable* points) {
  auto batch = DecodeRecordBatch(bytes);
  if (!batch) return batch;
  std::vector<PointId> point_of;
  point_of.reserve(batch->point_names.size());
  for (const std::string& n : batch->point_names) point_of.push_back(points->Intern(n));
  for (FlowRecord& r : batch->records) {
    if (r.point != kNoPoint) r.point = point_of[r.point];
  }
  return batch;
}

}  // namespace prism::scaleout
