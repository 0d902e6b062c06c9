#include "ingest/ipfix/sequence_tracker.h"

namespace prism::ingest {
namespace {

// Convention bits: bit 0 = numbered through this message (else before it), bit 1 = options
// records counted.
uint32_t Expected(int convention, uint32_t previous_sequence, uint32_t previous_count,
                  uint32_t this_count) {
  return (convention & 1) != 0 ? previous_sequence + this_count
                               : previous_sequence + previous_count;
}

uint32_t CountOf(int convention, uint32_t data, uint32_t options) {
  return (convention & 2) != 0 ? data + options : data;
}

}  // namespace

SequenceTracker::Gap SequenceTracker::Observe(uint64_t stream, uint32_t sequence, uint32_t data,
                                              uint32_t options, bool countable) {
  Gap gap;
  auto it = streams_.find(stream);
  if (it == streams_.end()) {
    if (streams_.size() >= max_streams_) return gap;
    it = streams_.emplace(stream, State{}).first;
  }
  State& s = it->second;
  if (s.have_previous) {
    if (s.agreed >= kTransitionsToLearn) {
      // Learned. Conventions that explain this message exactly stay; where none does, the
      // message follows a loss only if every surviving one says it is ahead (the least of
      // their counts is lost).
      uint8_t exact = 0;
      bool all_ahead = true;
      uint32_t least_ahead = UINT32_MAX;
      for (int c = 0; c < 4; ++c) {
        if ((s.alive & (1u << c)) == 0) continue;
        const uint32_t ahead = sequence - Expected(c, s.sequence, CountOf(c, s.data, s.options),
                                                   CountOf(c, data, options));
        if (ahead == 0) exact |= static_cast<uint8_t>(1u << c);
        if (ahead == 0 || ahead >= (1u << 31)) all_ahead = false;
        if (ahead < least_ahead) least_ahead = ahead;
      }
      if (exact != 0) {
        s.alive = exact;
      } else if (all_ahead) {
        gap.lost = least_ahead;
      } else {
        gap.went_back = true;
        s.alive = 0xF;  // a restart: learn again
        s.agreed = 0;
      }
    } else {
      uint8_t alive = 0;
      for (int c = 0; c < 4; ++c) {
        if ((s.alive & (1u << c)) != 0 &&
            sequence == Expected(c, s.sequence, CountOf(c, s.data, s.options),
                                 CountOf(c, data, options)))
          alive |= static_cast<uint8_t>(1u << c);
      }
      if (alive != 0) {
        s.alive = alive;
        ++s.agreed;
      } else {
        s.alive = 0xF;  // nothing explains it (a loss while learning, a restart): start again
        s.agreed = 0;
      }
    }
  }
  s.have_previous = countable;
  s.sequence = sequence;
  s.data = data;
  s.options = options;
  if (!countable) {
    s.alive = 0xF;
    s.agreed = 0;
  }
  return gap;
}

}  // namespace prism::ingest
