// File: tests/testing/flow_builder.h
// Builds flow records and tables in tests: FlowBuilder("10.0.0.1", "10.0.1.1").At(t).Bytes(b).
#pragma once

#include <string>

#include "core/flow_record.h"
#include "flow/flow_table.h"

namespace prism::testing {

class FlowBuilder {
 public:
  FlowBuilder(const std::string& src, const std::string& dst) {
    r_.src = *IpAddr::Parse(src);
    r_.dst = *IpAddr::Parse(dst);
    r_.proto = 17;
    r_.dst_port = 4791;
  }
  FlowBuilder& At(int64_t start_ns, int64_t duration_ns = 1'000) {
    r_.start_ns = start_ns;
    r_.end_ns = start_ns + duration_ns;
    return *this;
  }
  FlowBuilder& Bytes(uint64_t b) {
    r_.bytes = b;
    r_.packets = b / 4096 + 1;
    return *this;
  }
  FlowBuilder& Qp(uint32_t qp) {
    r_.qp = qp;
    return *this;
  }
  FlowRecord Build() const { return r_; }
  void Into(flow::FlowTable* t) const { t->OnRecord(r_); }

 private:
  FlowRecord r_;
};

}  // namespace prism::testing
