#include "flow/flow_table.h"

#include <algorithm>
#include <numeric>

namespace prism::flow {

void FlowTable::OnRecord(const FlowRecord& r) {
  start_ns_.push_back(r.start_ns);
  end_ns_.push_back(r.end_ns);
  src_.push_back(endpoints_.Intern(r.src));
  dst_.push_back(endpoints_.Intern(r.dst));
  bytes_.push_back(r.bytes);
  qp_.push_back(r.qp);
  point_.push_back(r.point);
  sampling_rate_.push_back(r.sampling_rate);
  min_start_ns_ = std::min(min_start_ns_, r.start_ns);
  max_end_ns_ = std::max(max_end_ns_, r.end_ns);
}

void FlowTable::Reserve(size_t rows) {
  start_ns_.reserve(rows);
  end_ns_.reserve(rows);
  src_.reserve(rows);
  dst_.reserve(rows);
  bytes_.reserve(rows);
  qp_.reserve(rows);
  point_.reserve(rows);
  sampling_rate_.reserve(rows);
}

namespace {

template <typename T>
void Permute(std::vector<T>* column, const std::vector<RowId>& order) {
  std::vector<T> out(column->size());
  for (size_t i = 0; i < order.size(); ++i) out[i] = (*column)[order[i]];
  column->swap(out);
}

}  // namespace

void FlowTable::SortByStart() {
  std::vector<RowId> order(size());
  std::iota(order.begin(), order.end(), RowId{0});
  if (std::is_sorted(start_ns_.begin(), start_ns_.end())) return;
  std::stable_sort(order.begin(), order.end(), [this](RowId a, RowId b) {
    if (start_ns_[a] != start_ns_[b]) return start_ns_[a] < start_ns_[b];
    if (end_ns_[a] != end_ns_[b]) return end_ns_[a] < end_ns_[b];
    if (src_[a] != src_[b]) return src_[a] < src_[b];
    return dst_[a] < dst_[b];
  });
  Permute(&start_ns_, order);
  Permute(&end_ns_, order);
  Permute(&src_, order);
  Permute(&dst_, order);
  Permute(&bytes_, order);
  Permute(&qp_, order);
  Permute(&point_, order);
  Permute(&sampling_rate_, order);
}

}  // namespace prism::flow
