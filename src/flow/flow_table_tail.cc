#include "flow/flow_table_tail.h"

#include <algorithm>
#include <cstring>

#include "core/status.h"
#include "flow/sampling_rates.h"

namespace prism::flow {

void FlowTableTail::TakeRows(size_t n) { PRISM_CHECK(n <= room_ - rows_); }

void FlowTableTail::OnRecord(const FlowRecord& r) {
  TakeRows(1);
  const size_t i = rows_++;
  at_.start_ns[i] = r.start_ns;
  at_.end_ns[i] = r.end_ns;
  at_.src[i] = endpoint_cache_.Intern(r.src, &endpoints_);
  at_.dst[i] = endpoint_cache_.Intern(r.dst, &endpoints_);
  at_.bytes[i] = r.bytes;
  at_.qp[i] = r.qp;
  at_.point[i] = r.point;
  AppendSamplingRates(&sampling_rate_, i, {&r.sampling_rate, 1});
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
  copy(at_.end_ns, batch->end_ns);
  copy(at_.bytes, batch->bytes);
  copy(at_.qp, batch->qp);
  copy(at_.point, batch->point);
  AppendSamplingRates(&sampling_rate_, at, std::span(batch->sampling_rate.data(), n));
  for (size_t i = 0; i < n; ++i) {
    at_.src[at + i] = endpoint_cache_.Intern(batch->src[i], &endpoints_);
    at_.dst[at + i] = endpoint_cache_.Intern(batch->dst[i], &endpoints_);
    min_start_ns_ = std::min(min_start_ns_, batch->start_ns[i]);
    max_end_ns_ = std::max(max_end_ns_, batch->end_ns[i]);
  }
  rows_ += n;
}

}  // namespace prism::flow
