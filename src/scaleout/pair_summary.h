// File: scaleout/pair_summary.h
// What a collector tells the recogniser instead of its records (docs/scale-out.md, Sharding by
// job): the endpoint pairs it saw exchange traffic, per step bucket of start time, each pair once
// per bucket. Job recognition needs only the pair graph; a collector's pairs are a few thousand
// per window where its records are millions.
//
// Layout, little-endian: "LPPS", version (1 byte), 3 zero bytes, entries (u32), then per entry
// the bucket's start (i64 ns), src (16 bytes), dst (16 bytes).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/flow_record.h"
#include "core/ip_addr.h"
#include "core/status.h"

namespace prism::scaleout {

inline constexpr char kPairStream[] = "LLMPRISM_PAIRS";
inline constexpr char kPairSubjects[] = "pairs.>";

struct PairSighting {
  int64_t bucket_start_ns = 0;
  IpAddr src, dst;
  friend bool operator==(const PairSighting&, const PairSighting&) = default;
};

std::string EncodePairSummary(std::span<const PairSighting> pairs);
// Errors name the byte offset and what was expected there.
StatusOr<std::vector<PairSighting>> DecodePairSummary(std::span<const uint8_t> bytes);

// The collector's side: each record's (bucket, src, dst) once; TakeNew() gives what was not given
// before. Buckets older than `keep_buckets` behind the newest are forgotten (a pair seen again
// there would be given again, which the recogniser takes as the same pair).
class PairSummaryBuilder {
 public:
  PairSummaryBuilder(int64_t bucket_ns, int keep_buckets)
      : bucket_ns_(bucket_ns), keep_buckets_(keep_buckets) {}
  void Add(const FlowRecord& record);
  std::vector<PairSighting> TakeNew();
  uint64_t pairs_given() const { return given_; }

 private:
  struct Hash {
    size_t operator()(const PairSighting& p) const;
  };
  void Forget();
  int64_t bucket_ns_;
  int keep_buckets_;
  int64_t newest_bucket_ns_ = INT64_MIN;
  std::unordered_set<PairSighting, Hash> seen_;
  std::vector<PairSighting> new_;
  uint64_t given_ = 0;
};

}  // namespace prism::scaleout
