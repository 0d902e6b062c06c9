#include "flow/flow_table_tail.h"

#include <algorithm>
#include <cstring>
#include <ranges>

#include "core/status.h"
#include "flow/lazy_column.h"

namespace prism::flow {

void FlowTableTail::TakeRows(size_t n) { PRISM_CHECK(n <= room_ - rows_); }

void FlowTableTail::OnRecord(const FlowRecord& r) {
  TakeRows(1);
  const size_t i = rows_++;
  at_.start_ns[i] = r.start_ns;
  const uint64_t duration = DurationOf(r.start_ns, r.end_ns);
  at_.duration_low[i] = LowHalf(duration);
  AppendLazy(&duration_high_, i, std::span(&duration, 1), 0u, HighHalf);
  at_.src[i] = endpoint_cache_.Intern(r.src, &endpoints_);
  at_.dst[i] = endpoint_cache_.Intern(r.dst, &endpoints_);
  at_.bytes_low[i] = LowHalf(r.bytes);
  AppendLazy(&bytes_high_, i, std::span(&r.bytes, 1), 0u, HighHalf);
  at_.qp[i] = r.qp;
  at_.point[i] = r.point;
  AppendLazy(&sampling_rate_, i, std::span(&r.sampling_rate, 1), 1u, HeldSamplingRate);
  min_start_ns_ = std::min(min_start_ns_, r.start_ns);
  max_end_ns_ = std::max(max_end_ns_, r.end_ns);
}

void FlowTableTail::OnBatch(RecordBatch* batch) {
  const size_t n = batch->size;
  if (n == 0) return;
  TakeRows(n);
  const size_t at = rows_;
  auto copy = [&](auto* to, const auto& from) {
    std::memcpy(to + at, from.data(), n * sizeof(*to));
  };
  copy(at_.start_ns, batch->start_ns);
  const auto duration = [batch](size_t i) {
    return DurationOf(batch->start_ns[i], batch->end_ns[i]);
  };
  for (size_t i = 0; i < n; ++i) {
    at_.duration_low[at + i] = LowHalf(duration(i));
    at_.bytes_low[at + i] = LowHalf(batch->bytes[i]);
  }
  AppendLazy(&duration_high_, at, std::views::iota(size_t{0}, n) | std::views::transform(duration),
             0u, HighHalf);
  AppendLazy(&bytes_high_, at, std::span(batch->bytes.data(), n), 0u, HighHalf);
  copy(at_.qp, batch->qp);
  copy(at_.point, batch->point);
  AppendLazy(&sampling_rate_, at, std::span(batch->sampling_rate.data(), n), 1u, HeldSamplingRate);
  for (size_t i = 0; i < n; ++i) {
    at_.src[at + i] = endpoint_cache_.Intern(batch->src[i], &endpoints_);
    at_.dst[at + i] = endpoint_cache_.Intern(batch->dst[i], &endpoints_);
    min_start_ns_ = std::min(min_start_ns_, batch->start_ns[i]);
    max_end_ns_ = std::max(max_end_ns_, batch->end_ns[i]);
  }
  rows_ += n;
}

}  // namespace prism::flow
