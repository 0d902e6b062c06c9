#include "pipeline/record_handoff.h"

#include <utility>

namespace prism::pipeline {

RecordHandOff::RecordHandOff(FlowSink* inner) : inner_(inner) {
  filling_.reserve(kBatchRecords);
  worker_ = std::thread([this] { Run(); });
}

RecordHandOff::~RecordHandOff() { Finish(); }

void RecordHandOff::OnRecord(const FlowRecord& record) {
  filling_.push_back(record);
  if (filling_.size() == kBatchRecords) HandOver();
}

void RecordHandOff::HandOver() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return full_.size() < kMaxBatchesInFlight; });
    full_.push_back(std::move(filling_));
    filling_ = {};
    if (!spare_.empty()) {
      filling_ = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  cv_.notify_all();
  filling_.reserve(kBatchRecords);
}

void RecordHandOff::Finish() {
  if (!worker_.joinable()) return;
  if (!filling_.empty()) HandOver();
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void RecordHandOff::Run() {
  for (;;) {
    std::vector<FlowRecord> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !full_.empty() || done_; });
      if (full_.empty()) return;
      batch = std::move(full_.front());
      full_.pop_front();
    }
    cv_.notify_all();
    for (const FlowRecord& r : batch) inner_->OnRecord(r);
    batch.clear();
    {
      std::lock_guard lock(mu_);
      spare_.push_back(std::move(batch));
    }
  }
}

}  // namespace prism::pipeline
