#include "io/ipfix_file.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "core/big_endian.h"
#include "core/ntp_time.h"
#include "io/csv_util.h"
#include "io/file_reader.h"
#include "io/ipfix_file_framer.h"
#include "ingest/ipfix/export_decoder.h"

namespace prism::io {
namespace {

constexpr uint16_t kIpfixVersion = 10;
constexpr size_t kMessageHeaderBytes = 16;
constexpr size_t kMaxMessageBytes = 65535;
constexpr uint16_t kTemplateSetId = 2;
constexpr uint16_t kOptionsTemplateSetId = 3;
constexpr uint16_t kVarLen = 0xFFFF;
constexpr uint16_t kEnterpriseBit = 0x8000;
constexpr size_t kMaxPointNameBytes = 1024;
constexpr int64_t kNsPerSecond = 1'000'000'000;

inline void Put16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v);
}
inline void Put32(char* p, uint32_t v) {
  Put16(p, static_cast<uint16_t>(v >> 16));
  Put16(p + 2, static_cast<uint16_t>(v));
}
inline void Put64(char* p, uint64_t v) {
  Put32(p, static_cast<uint32_t>(v >> 32));
  Put32(p + 4, static_cast<uint32_t>(v));
}
void Append16(std::string* s, uint16_t v) {
  char b[2];
  Put16(b, v);
  s->append(b, 2);
}
void Append32(std::string* s, uint32_t v) {
  char b[4];
  Put32(b, v);
  s->append(b, 4);
}

// --- the writer's templates --------------------------------------------------------------------

struct FieldSpec {
  uint16_t id;
  uint16_t len;
  uint32_t pen;  // 0 = IANA
};
constexpr FieldSpec kCommonFields[] = {
    {156, 8, 0},  // flowStartNanoseconds
    {157, 8, 0},  // flowEndNanoseconds
    {1, 8, 0},    // octetDeltaCount
    {2, 8, 0},    // packetDeltaCount
    {7, 2, 0},    // sourceTransportPort
    {11, 2, 0},   // destinationTransportPort
    {4, 1, 0},    // protocolIdentifier
    {305, 4, 0},  // samplingPacketInterval
    {kPrismIeRoceDestQp, 4, kPrismEnterpriseNumber},
    {kPrismIeObservationPoint, kVarLen, kPrismEnterpriseNumber},
};
constexpr size_t kCommonFixedBytes = 8 + 8 + 8 + 8 + 2 + 2 + 1 + 4 + 4;

void AppendTemplate(std::string* s, uint16_t tid, bool v6) {
  Append16(s, tid);
  Append16(s, static_cast<uint16_t>(2 + std::size(kCommonFields)));
  Append16(s, v6 ? 27 : 8);  // sourceIPv6Address / sourceIPv4Address
  Append16(s, v6 ? 16 : 4);
  Append16(s, v6 ? 28 : 12);  // destinationIPv6Address / destinationIPv4Address
  Append16(s, v6 ? 16 : 4);
  for (const FieldSpec& f : kCommonFields) {
    Append16(s, f.pen != 0 ? static_cast<uint16_t>(f.id | kEnterpriseBit) : f.id);
    Append16(s, f.len);
    if (f.pen != 0) Append32(s, f.pen);
  }
}

}  // namespace

StatusOr<size_t> ShiftWrittenMessageTimes(std::span<uint8_t> m, uint32_t seconds) {
  auto bad = [&](size_t at, const char* what) -> StatusOr<size_t> {
    return MakeError(ErrorCode::kInvalidArgument, "byte {} of a {}-byte message: {}", at,
                     m.size(), what);
  };
  if (m.size() < kMessageHeaderBytes || LoadBe16(m.data()) != kIpfixVersion ||
      LoadBe16(m.data() + 2) != m.size()) {
    return bad(0, "not one IPFIX message");
  }
  size_t records = 0;
  for (size_t pos = kMessageHeaderBytes; pos < m.size();) {
    if (pos + 4 > m.size()) return bad(pos, "truncated set header");
    const uint16_t id = LoadBe16(m.data() + pos);
    const size_t len = LoadBe16(m.data() + pos + 2);
    if (len < 4 || pos + len > m.size()) return bad(pos, "bad set length");
    if (id == kIpfixTemplateV4 || id == kIpfixTemplateV6) {
      const size_t addr_bytes = id == kIpfixTemplateV4 ? 8 : 32;
      for (size_t r = pos + 4; r < pos + len;) {
        // Addresses, then start and end (NTP: seconds in the high 32 bits), then the fixed
        // fields, then the observation point (variable length, RFC 7011 §7).
        const size_t var = r + addr_bytes + kCommonFixedBytes;
        if (var >= pos + len) return bad(r, "truncated record");
        size_t var_len = m[var], var_head = 1;
        if (var_len == 255) {
          if (var + 3 > pos + len) return bad(var, "truncated length");
          var_len = LoadBe16(m.data() + var + 1);
          var_head = 3;
        }
        for (size_t t : {r + addr_bytes, r + addr_bytes + 8}) {
          const uint32_t s = LoadBe32(m.data() + t) + seconds;
          m[t] = uint8_t(s >> 24);
          m[t + 1] = uint8_t(s >> 16);
          m[t + 2] = uint8_t(s >> 8);
          m[t + 3] = uint8_t(s);
        }
        ++records;
        r = var + var_head + var_len;
        if (r > pos + len) return bad(var, "variable-length field past its set");
      }
    } else if (id != kTemplateSetId) {
      return bad(pos, "a set this writer does not write");
    }
    pos += len;
  }
  return records;
}

// --- writer --------------------------------------------------------------------------------------

IpfixFileWriter::IpfixFileWriter(std::ostream* out, const PointTable* points,
                                 uint32_t observation_domain)
    : out_(out), points_(points), domain_(observation_domain) {
  msg_.reserve(kMaxMessageBytes);
}

IpfixFileWriter::~IpfixFileWriter() {
  if (!finished_) (void)Finish();
}

void IpfixFileWriter::StartMessage() {
  msg_.assign(kMessageHeaderBytes, '\0');
  if (!templates_written_) {
    size_t start = msg_.size();
    Append16(&msg_, kTemplateSetId);
    Append16(&msg_, 0);
    AppendTemplate(&msg_, kIpfixTemplateV4, false);
    AppendTemplate(&msg_, kIpfixTemplateV6, true);
    Put16(&msg_[start + 2], static_cast<uint16_t>(msg_.size() - start));
    templates_written_ = true;
  }
  set_start_ = 0;
  set_id_ = 0;
}

void IpfixFileWriter::CloseSet() {
  if (set_start_ == 0) return;
  Put16(&msg_[set_start_ + 2], static_cast<uint16_t>(msg_.size() - set_start_));
  set_start_ = 0;
  set_id_ = 0;
}

void IpfixFileWriter::FlushMessage() {
  if (msg_.empty()) return;
  CloseSet();
  Put16(&msg_[0], kIpfixVersion);
  Put16(&msg_[2], static_cast<uint16_t>(msg_.size()));
  Put32(&msg_[4], export_time_s_);
  Put32(&msg_[8], sequence_);
  Put32(&msg_[12], domain_);
  out_->write(msg_.data(), static_cast<std::streamsize>(msg_.size()));
  sequence_ += records_in_msg_;
  records_in_msg_ = 0;
  export_time_s_ = 0;
  msg_.clear();
}

void IpfixFileWriter::OnRecord(const FlowRecord& r) {
  PRISM_CHECK(!finished_);
  bool v6 = !r.src.is_v4() || !r.dst.is_v4();
  uint16_t tid = v6 ? kIpfixTemplateV6 : kIpfixTemplateV4;
  std::string_view name;
  if (r.point != kNoPoint && points_ != nullptr && r.point < points_->size()) {
    name = points_->Name(r.point);
    if (name.size() > kMaxPointNameBytes) name = name.substr(0, kMaxPointNameBytes);
  }
  size_t name_hdr = name.size() < 255 ? 1 : 3;
  size_t rec_bytes = (v6 ? 32 : 8) + kCommonFixedBytes + name_hdr + name.size();
  size_t need = rec_bytes + (set_id_ == tid ? 0 : 4);
  if (!msg_.empty() && msg_.size() + need > kMaxMessageBytes) FlushMessage();
  if (msg_.empty()) StartMessage();
  if (set_id_ != tid) {
    CloseSet();
    set_start_ = msg_.size();
    set_id_ = tid;
    Append16(&msg_, tid);
    Append16(&msg_, 0);
  }
  size_t off = msg_.size();
  msg_.resize(off + rec_bytes);
  char* p = &msg_[off];
  if (v6) {
    std::memcpy(p, r.src.bytes().data(), 16);
    std::memcpy(p + 16, r.dst.bytes().data(), 16);
    p += 32;
  } else {
    Put32(p, r.src.v4());
    Put32(p + 4, r.dst.v4());
    p += 8;
  }
  Put64(p, UnixNsToNtp(r.start_ns));
  Put64(p + 8, UnixNsToNtp(r.end_ns));
  Put64(p + 16, r.bytes);
  Put64(p + 24, r.packets);
  Put16(p + 32, r.src_port);
  Put16(p + 34, r.dst_port);
  p[36] = static_cast<char>(r.proto);
  Put32(p + 37, r.sampling_rate);
  Put32(p + 41, r.qp);
  p += kCommonFixedBytes;
  if (name_hdr == 1) {
    *p++ = static_cast<char>(name.size());
  } else {
    *p++ = static_cast<char>(255);
    Put16(p, static_cast<uint16_t>(name.size()));
    p += 2;
  }
  if (!name.empty()) std::memcpy(p, name.data(), name.size());
  ++records_in_msg_;
  int64_t end_s = r.end_ns / kNsPerSecond;
  uint32_t export_s = end_s <= 0 ? 0 : static_cast<uint32_t>(std::min<int64_t>(end_s, UINT32_MAX));
  export_time_s_ = std::max(export_time_s_, export_s);
}

Status IpfixFileWriter::Finish() {
  if (finished_) return OkStatus();
  finished_ = true;
  if (!templates_written_) StartMessage();  // a valid file even without records
  FlushMessage();
  out_->flush();
  if (!out_->good()) return MakeError(ErrorCode::kDataLoss, "IPFIX writer: write failed");
  return OkStatus();
}

// --- readers -------------------------------------------------------------------------------------

StatusOr<uint64_t> ReadIpfixBuffer(std::span<const std::byte> data, const std::string& name,
                                   FlowSink* sink, PointTable* points, Stats* stats) {
  IpfixFileFramer decoder(name, sink, points, stats);
  decoder.Decode(reinterpret_cast<const uint8_t*>(data.data()), data.size(), 0, true);
  return decoder.Finish(data.size());
}

StatusOr<uint64_t> ReadIpfixFile(const std::string& path, FlowSink* sink, PointTable* points,
                                 Stats* stats) {
  PRISM_ASSIGN_OR_RETURN(auto reader, FileReader::Open(path));
  IpfixFileFramer decoder(path, sink, points, stats);
  const std::unique_ptr<std::byte[]> storage(new std::byte[kIpfixReadBufferBytes]);
  const std::span<std::byte> buf(storage.get(), kIpfixReadBufferBytes);
  size_t filled = 0;
  uint64_t base = 0;
  for (;;) {
    // The framer leaves less than a message undecoded (or all of a buffer of garbage it gave up
    // on, then `used` is the whole buffer): there is always room to read.
    PRISM_CHECK(filled < buf.size());
    size_t want = buf.size() - filled;
    PRISM_ASSIGN_OR_RETURN(size_t n, reader->Read(buf.subspan(filled, want)));
    filled += n;
    bool eof = n < want;
    size_t used = decoder.Decode(reinterpret_cast<const uint8_t*>(buf.data()), filled, base, eof);
    if (eof) return decoder.Finish(base + filled);
    std::memmove(buf.data(), buf.data() + used, filled - used);
    filled -= used;
    base += used;
  }
}

}  // namespace prism::io
