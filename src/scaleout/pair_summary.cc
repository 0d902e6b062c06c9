#include "scaleout/pair_summary.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace prism::scaleout {

namespace {

constexpr char kMagic[4] = {'L', 'P', 'P', 'S'};
constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderBytes = 12;
constexpr size_t kEntryBytes = 8 + 16 + 16;

template <typename T>
void Put(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out->append(b, sizeof(T));
}

void PutAddr(std::string* out, const IpAddr& a) {
  out->append(reinterpret_cast<const char*>(a.bytes().data()), 16);
}

}  // namespace

std::string EncodePairSummary(std::span<const PairSighting> pairs) {
  std::string out(kMagic, 4);
  out.push_back(static_cast<char>(kVersion));
  out.append(3, '\0');
  Put<uint32_t>(&out, static_cast<uint32_t>(pairs.size()));
  for (const PairSighting& p : pairs) {
    Put<int64_t>(&out, p.bucket_start_ns);
    PutAddr(&out, p.src);
    PutAddr(&out, p.dst);
  }
  return out;
}

StatusOr<std::vector<PairSighting>> DecodePairSummary(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return MakeError(ErrorCode::kDataLoss,
                     "pair summary: byte 0: expected \"LPPS\" and a "
                     "12-byte header, got {} bytes",
                     bytes.size());
  }
  if (bytes[4] != kVersion) {
    return MakeError(ErrorCode::kDataLoss, "pair summary: byte 4: version {}, expected {}",
                     bytes[4], kVersion);
  }
  uint32_t n = 0;
  std::memcpy(&n, bytes.data() + 8, 4);
  if (bytes.size() != kHeaderBytes + size_t{n} * kEntryBytes) {
    return MakeError(ErrorCode::kDataLoss,
                     "pair summary: byte 8: {} entries need {} bytes, the "
                     "message has {}",
                     n, kHeaderBytes + size_t{n} * kEntryBytes, bytes.size());
  }
  std::vector<PairSighting> out(n);
  const uint8_t* p = bytes.data() + kHeaderBytes;
  for (PairSighting& s : out) {
    std::memcpy(&s.bucket_start_ns, p, 8);
    s.src = IpAddr::FromV6(p + 8);
    s.dst = IpAddr::FromV6(p + 24);
    p += kEntryBytes;
  }
  return out;
}

size_t PairSummaryBuilder::Hash::operator()(const PairSighting& p) const {
  const IpAddrHash h;
  return h(p.src) * 31 + h(p.dst) * 17 + std::hash<int64_t>()(p.bucket_start_ns);
}

void PairSummaryBuilder::Add(const FlowRecord& record) {
  const int64_t q = record.start_ns / bucket_ns_ - (record.start_ns % bucket_ns_ < 0 ? 1 : 0);
  PairSighting s{q * bucket_ns_, record.src, record.dst};
  if (!seen_.insert(s).second) return;
  new_.push_back(s);
  if (s.bucket_start_ns > newest_bucket_ns_) {
    newest_bucket_ns_ = s.bucket_start_ns;
    Forget();
  }
}

void PairSummaryBuilder::Forget() {
  const int64_t oldest = newest_bucket_ns_ - keep_buckets_ * bucket_ns_;
  std::erase_if(seen_, [&](const PairSighting& p) { return p.bucket_start_ns < oldest; });
}

std::vector<PairSighting> PairSummaryBuilder::TakeNew() {
  given_ += new_.size();
  return std::exchange(new_, {});
}

}  // namespace prism::scaleout
