#include "diagnosis/rules/fabric_contribution_codec.h"

#include <cstring>

namespace prism::diagnosis {
namespace {

constexpr char kMagic[4] = {'L', 'P', 'F', 'C'};
constexpr uint8_t kVersion = 1;

uint64_t ZigZag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
int64_t UnZigZag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }

class Writer {
 public:
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(char(uint8_t(v) | 0x80));
      v >>= 7;
    }
    out_.push_back(char(v));
  }
  void Signed(int64_t v) { Varint(ZigZag(v)); }
  void Bytes(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  void Names(const std::vector<std::string>& names) {
    Varint(names.size());
    for (const std::string& s : names) {
      Varint(s.size());
      Bytes(s.data(), s.size());
    }
  }
  void Addr(const IpAddr& a) {
    if (a.is_v4()) {
      const uint32_t v = a.v4();
      out_.push_back(4);
      Bytes(&v, 4);
    } else {
      out_.push_back(16);
      Bytes(a.bytes().data(), 16);
    }
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what Writer wrote; the first failure is kept (with its offset) and every later read
// gives 0, so the decoder checks once per section.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= b_.size()) return Fail("truncated integer");
      const uint8_t byte = b_[pos_++];
      v |= uint64_t(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return v;
    }
    return Fail("integer longer than 10 bytes");
  }
  int64_t Signed() { return UnZigZag(Varint()); }
  // A count of items each at least `min_bytes` long: more than the bytes left is an error (so a
  // corrupt count cannot ask for gigabytes).
  size_t Count(size_t min_bytes) {
    const uint64_t n = Varint();
    if (n > (b_.size() - std::min(pos_, b_.size())) / min_bytes) return Fail("count beyond the end");
    return size_t(n);
  }
  std::vector<std::string> Names() {
    std::vector<std::string> out(Count(1));
    for (std::string& s : out) {
      const size_t n = Count(1);
      if (!error_.empty()) break;
      s.assign(reinterpret_cast<const char*>(b_.data() + pos_), n);
      pos_ += n;
    }
    return out;
  }
  IpAddr Addr() {
    if (pos_ >= b_.size()) return Fail("truncated address"), IpAddr();
    const uint8_t n = b_[pos_++];
    if ((n != 4 && n != 16) || b_.size() - pos_ < n) return Fail("bad address"), IpAddr();
    IpAddr a;
    if (n == 4) {
      uint32_t v;
      std::memcpy(&v, b_.data() + pos_, 4);
      a = IpAddr::FromV4(v);
    } else {
      a = IpAddr::FromV6(b_.data() + pos_);
    }
    pos_ += n;
    return a;
  }
  // An index below `size`, or -1 when `allow_none` and it says none (stored as index + 1).
  int64_t Index(size_t size, bool allow_none) {
    const uint64_t v = Varint();
    if (allow_none && v == 0) return -1;
    const uint64_t i = allow_none ? v - 1 : v;
    if (i >= size) return Fail("index out of range"), -1;
    return int64_t(i);
  }
  uint64_t Fail(const char* what) {
    if (error_.empty()) error_ = fmt::format("byte {}: {}", pos_, what);
    pos_ = b_.size();
    return 0;
  }
  bool done() const { return pos_ == b_.size(); }
  const std::string& error() const { return error_; }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
  std::string error_;
};

void WriteEndpoints(const FabricContribution& c, Writer* w) {
  w->Varint(c.endpoint_addr.size());
  for (size_t e = 0; e < c.endpoint_addr.size(); ++e) {
    w->Addr(c.endpoint_addr[e]);
    w->Varint(uint64_t(c.endpoint_job[e] + 1));
    w->Varint(uint64_t(c.endpoint_leaf[e] + 1));
  }
  w->Varint(c.pairs.size());
  for (const auto& p : c.pairs) {
    w->Varint(p.a);
    w->Varint(p.b);
    w->Varint(uint64_t(p.label));
  }
}

void WriteRecords(const FabricContribution& c, Writer* w) {
  w->Varint(c.records());
  int64_t previous = c.first_start_ns;
  auto minus = [](int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); };
  for (size_t r = 0; r < c.records(); ++r) {
    w->Signed(minus(c.start_ns[r], previous));
    previous = c.start_ns[r];
    w->Signed(minus(c.end_ns[r], c.start_ns[r]));
    w->Varint(c.bytes[r]);
    w->Varint(c.src[r]);
    w->Varint(c.dst[r]);
    w->Varint(c.point[r] == kNoPoint ? 0 : uint64_t(c.point[r]) + 1);
  }
}

void ReadEndpoints(Reader* in, FabricContribution* c) {
  const size_t n = in->Count(3);
  for (size_t e = 0; e < n; ++e) {
    c->endpoint_addr.push_back(in->Addr());
    c->endpoint_job.push_back(int32_t(in->Index(c->jobs.size(), true)));
    c->endpoint_leaf.push_back(int32_t(in->Index(c->leaf_names.size(), true)));
  }
  c->pairs.resize(in->Count(3));
  for (auto& p : c->pairs) {
    p.a = uint32_t(in->Index(n, false));
    p.b = uint32_t(in->Index(n, false));
    p.label = analysis::PairLabel(in->Index(size_t(analysis::PairLabel::kUnknown) + 1, false));
  }
}

void ReadRecords(Reader* in, FabricContribution* c) {
  const size_t n = in->Count(6);
  const size_t endpoints = c->endpoint_addr.size();
  int64_t previous = c->first_start_ns;
  // Sums in unsigned arithmetic: corrupt steps wrap (and are then just odd times), never
  // overflow a signed integer.
  auto plus = [](int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); };
  for (size_t r = 0; r < n && in->error().empty(); ++r) {
    previous = plus(previous, in->Signed());
    c->start_ns.push_back(previous);
    c->end_ns.push_back(plus(previous, in->Signed()));
    c->bytes.push_back(in->Varint());
    c->src.push_back(uint32_t(in->Index(endpoints, false)));
    c->dst.push_back(uint32_t(in->Index(endpoints, false)));
    const int64_t p = in->Index(c->points.size(), true);
    c->point.push_back(p < 0 ? kNoPoint : uint32_t(p));
  }
}

}  // namespace

std::string EncodeFabricContribution(const FabricContribution& c) {
  Writer w;
  w.Bytes(kMagic, 4);
  w.Bytes(&kVersion, 1);
  w.Signed(c.first_start_ns);
  w.Signed(c.last_start_ns);
  w.Names(c.jobs);
  w.Names(c.leaf_names);
  w.Names(c.points);
  WriteEndpoints(c, &w);
  WriteRecords(c, &w);
  return w.Take();
}

StatusOr<FabricContribution> DecodeFabricContribution(std::span<const uint8_t> bytes) {
  if (bytes.size() < 5 || std::memcmp(bytes.data(), kMagic, 4) != 0)
    return MakeError(ErrorCode::kDataLoss,
                     "fabric contribution: byte 0: expected \"LPFC\", got {} bytes", bytes.size());
  if (bytes[4] != kVersion)
    return MakeError(ErrorCode::kDataLoss, "fabric contribution: byte 4: version {}, expected {}",
                     bytes[4], kVersion);
  Reader in(bytes.subspan(5));
  FabricContribution c;
  c.first_start_ns = in.Signed();
  c.last_start_ns = in.Signed();
  c.jobs = in.Names();
  c.leaf_names = in.Names();
  c.points = in.Names();
  ReadEndpoints(&in, &c);
  ReadRecords(&in, &c);
  if (in.error().empty() && !in.done()) in.Fail("bytes after the last record");
  if (!in.error().empty())  // offsets after the 5-byte header
    return MakeError(ErrorCode::kDataLoss, "fabric contribution: after the header, {}", in.error());
  return c;
}

}  // namespace prism::diagnosis
