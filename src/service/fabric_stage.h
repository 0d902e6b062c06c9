// File: service/fabric_stage.h
// The fabric stage of a sharded service (serve --role fabric, docs/scale-out.md): each shard's
// analyser publishes, per window, its fabric contribution (diagnosis/rules/fabric_contribution.h:
// the records the bandwidth rule reads, with the names they refer to); the stage gathers them by
// window until every shard's is in, merges them and judges switches and links as one `serve`
// judges the window holding every shard's records.
//
// FabricWindows is the gathering, without I/O: contributions come in by (window end, shard);
// the oldest window is ready once every shard's contribution is in, or once every shard it lacks
// has sent a later window (an analyser publishes its windows in order: the missing one is not
// coming), or once it has waited `wait` since its first contribution. A shard with no record of
// a window (its jobs paused) sends an empty contribution for it, which counts as its part: the
// window is whole, and only a contribution that never came makes a shard missing. Windows are handed out
// oldest first, so the findings merge across windows in the order one `serve` merges them.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "diagnosis/rules/bandwidth_rule.h"
#include "diagnosis/rules/fabric_contribution.h"
#include "output/report.h"

namespace prism::service {

struct FabricWindowsOptions {
  int shards = 1;
  // How long a window waits for its missing shards after its first contribution came.
  std::chrono::milliseconds wait{40'000};
};

class FabricWindows {
 public:
  using Clock = std::chrono::steady_clock;
  enum class AddResult {
    kAdded,
    kDuplicate,     // this shard's contribution of the window is here already (kept the first)
    kAlreadyJudged, // the window was judged already (by this process, or before its restart)
    kBadShard,      // not in [0, shards)
  };

  // Windows ending at or before `judged_up_to_ns` were judged before (a restart): not again.
  FabricWindows(const FabricWindowsOptions& options, int64_t judged_up_to_ns);

  AddResult Add(int64_t window_end_ns, int shard, diagnosis::FabricContribution contribution,
                uint64_t stream_sequence, Clock::time_point now);

  struct Ready {
    int64_t window_end_ns = 0;
    std::vector<diagnosis::FabricContribution> parts;  // in shard order
    std::vector<int> shards;                            // of parts
    std::vector<int> missing;                           // shards without a contribution
    bool waited_out = false;                            // missing shards by the `wait`
  };
  // The oldest window, if it is ready (see above); call until nullopt.
  std::optional<Ready> TakeReady(Clock::time_point now);

  // Where a restarted stage reads the stream again: the first sequence of a contribution of a
  // window not judged yet; `next_sequence` when none is waiting.
  uint64_t ResumeSequence(uint64_t next_sequence) const;
  // This shard's contribution of the window is waiting already.
  bool Has(int64_t window_end_ns, int shard) const {
    auto it = windows_.find(window_end_ns);
    return it != windows_.end() && it->second.parts.count(shard) != 0;
  }
  int64_t judged_up_to_ns() const { return judged_up_to_ns_; }
  size_t pending_windows() const { return windows_.size(); }

 private:
  struct Pending {
    std::map<int, diagnosis::FabricContribution> parts;
    uint64_t first_sequence = UINT64_MAX;
    Clock::time_point first_arrival;
  };
  FabricWindowsOptions options_;
  int64_t judged_up_to_ns_;
  std::map<int64_t, Pending> windows_;       // by window end
  std::vector<int64_t> latest_end_by_shard_;  // the latest window each shard sent
};

// A merged contribution's switch and link findings as the report names them (GPUs by address,
// jobs by the contribution's job ids, switches sorted), in the report's order.
std::vector<output::ReportFinding> FabricReportFindings(const diagnosis::FabricContribution& merged,
                                                        const diagnosis::NetworkFindings& found);

}  // namespace prism::service
