#include "service/fabric_stage.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "core/name_table.h"

namespace prism::service {

FabricWindows::FabricWindows(const FabricWindowsOptions& options, int64_t judged_up_to_ns)
    : options_(options),
      judged_up_to_ns_(judged_up_to_ns),
      latest_end_by_shard_(static_cast<size_t>(std::max(options.shards, 0)), INT64_MIN) {}

FabricWindows::AddResult FabricWindows::Add(int64_t window_end_ns, int shard,
                                            diagnosis::FabricContribution contribution,
                                            uint64_t stream_sequence, Clock::time_point now) {
  if (shard < 0 || shard >= options_.shards) return AddResult::kBadShard;
  int64_t& latest = latest_end_by_shard_[static_cast<size_t>(shard)];
  latest = std::max(latest, window_end_ns);
  if (window_end_ns <= judged_up_to_ns_) return AddResult::kAlreadyJudged;
  auto [it, inserted] = windows_.try_emplace(window_end_ns);
  Pending& p = it->second;
  if (inserted) p.first_arrival = now;
  if (!p.parts.try_emplace(shard, std::move(contribution)).second) return AddResult::kDuplicate;
  p.first_sequence = std::min(p.first_sequence, stream_sequence);
  return AddResult::kAdded;
}

std::optional<FabricWindows::Ready> FabricWindows::TakeReady(Clock::time_point now) {
  if (windows_.empty()) return std::nullopt;
  auto it = windows_.begin();
  const int64_t end = it->first;
  Pending& p = it->second;
  std::vector<int> missing;
  bool moved_past = true;  // every missing shard has sent a later window
  for (int s = 0; s < options_.shards; ++s) {
    if (p.parts.count(s) != 0) continue;
    missing.push_back(s);
    if (latest_end_by_shard_[static_cast<size_t>(s)] <= end) moved_past = false;
  }
  const bool waited_out = !missing.empty() && !moved_past && now - p.first_arrival >= options_.wait;
  if (!missing.empty() && !moved_past && !waited_out) return std::nullopt;
  Ready r;
  r.window_end_ns = end;
  r.missing = std::move(missing);
  r.waited_out = waited_out;
  for (auto& [shard, c] : p.parts) {
    r.parts.push_back(std::move(c));
    r.shards.push_back(shard);
  }
  windows_.erase(it);
  judged_up_to_ns_ = std::max(judged_up_to_ns_, end);
  return r;
}

uint64_t FabricWindows::ResumeSequence(uint64_t next_sequence) const {
  uint64_t first = next_sequence;
  for (const auto& [end, p] : windows_) first = std::min(first, p.first_sequence);
  return first;
}

std::vector<output::ReportFinding> FabricReportFindings(const diagnosis::FabricContribution& merged,
                                                        const diagnosis::NetworkFindings& found) {
  // The contribution's endpoints, numbered as its indices, which the findings' GPUs are.
  EndpointTable endpoints;
  for (const IpAddr& a : merged.endpoint_addr) endpoints.Intern(a);
  std::vector<output::ReportFinding> out;
  for (const diagnosis::Finding& f : found.findings) {
    output::ReportFinding r = output::ConvertFinding(endpoints, f);
    if (f.job >= 0 && static_cast<size_t>(f.job) < merged.jobs.size()) {
      r.job = merged.jobs[static_cast<size_t>(f.job)];
    }
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const output::ReportFinding& a,
                                              const output::ReportFinding& b) {
    return std::tie(a.start_ns, a.kind, a.job, a.gpus, a.switches, a.metric, a.end_ns, a.value,
                    a.summary) < std::tie(b.start_ns, b.kind, b.job, b.gpus, b.switches,
                                          b.metric, b.end_ns, b.value, b.summary);
  });
  return out;
}

}  // namespace prism::service
