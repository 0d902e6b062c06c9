#include "service/clock_guard.h"

namespace prism::service {

bool PlausibleTime(const FlowRecord& r, int64_t reference_ns, const TimePlausibility& o) {
  if (!pipeline::PlausibleDuration(r, o.max_record_ns)) return false;
  if (reference_ns == kNoReferenceNs) return true;
  return r.end_ns <= reference_ns + o.max_clock_skew_ns &&
         r.end_ns >= reference_ns - o.max_export_delay_ns;
}

int64_t ExportTimeNs(const uint8_t* d, size_t size) {
  auto be32 = [d](size_t at) {
    return (uint32_t{d[at]} << 24) | (uint32_t{d[at + 1]} << 16) | (uint32_t{d[at + 2]} << 8) |
           uint32_t{d[at + 3]};
  };
  if (size < 12) return kNoReferenceNs;
  const unsigned version = (unsigned{d[0]} << 8) | d[1];
  if (version == 10) return int64_t{be32(4)} * 1'000'000'000;
  if (version == 9) return int64_t{be32(8)} * 1'000'000'000;
  return kNoReferenceNs;
}

ClockGuard::Verdict ClockGuard::Check(const FlowRecord& r, size_t source, int64_t newest_end_ns,
                                      int64_t oldest_open_ns, int64_t now_wall_ns) {
  if (newest_end_ns == INT64_MIN) return Verdict::kAdd;  // the first record sets the clock
  const bool ahead = r.end_ns > newest_end_ns + options_.max_jump_ns;
  const bool behind =
      oldest_open_ns != INT64_MIN && r.end_ns < oldest_open_ns - options_.max_jump_ns;
  if (!ahead && !behind) return Verdict::kAdd;
  if (held_.size() >= options_.max_held) return Verdict::kRefuse;
  // One direction at a time: what is held is either the clock's future or its past.
  if (!held_.empty() && held_behind_ != behind) return Verdict::kRefuse;
  held_behind_ = behind;
  held_.push_back({r, source, now_wall_ns, added_});
  return Verdict::kHold;
}

void ClockGuard::Tick(int64_t now_wall_ns, std::vector<Held>* release, bool* behind,
                      std::vector<Held>* refused) {
  *behind = held_behind_;
  if (held_.empty()) return;
  const int64_t first_wall = held_.front().wall_ns;
  if (added_ > held_.front().added_before) {
    // Records in range arrived after these were held: the clock is right, they are not.
    while (!held_.empty() && added_ > held_.front().added_before &&
           now_wall_ns - held_.front().wall_ns >= options_.confirm_wall_ns) {
      refused->push_back(held_.front());
      held_.pop_front();
    }
    return;
  }
  if (now_wall_ns - first_wall >= options_.confirm_wall_ns || held_.size() >= options_.quorum) {
    // Nothing in range since: the stream has moved.
    release->insert(release->end(), held_.begin(), held_.end());
    held_.clear();
  }
}

}  // namespace prism::service
