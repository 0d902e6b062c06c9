// File: service/clock_guard.h
// Keeps implausible record times from moving `serve`'s window clock (the window buffer's newest
// record end, service/window_buffer.h). One bad timestamp — an exporter rebooting with its clock
// at 0, a datagram from the far future, out-of-order batches of another era — would otherwise
// jump the clock, make every window due at once and turn every later record into a late one.
// Two checks, each counting what it refuses (implausible_time, never silent):
//   - PlausibleTime, per record as it is decoded: it lasts longer than `max_record_ns` or ends
//     before it starts (pipeline/record_duration.h: analyze's check of its files), or sits far
//     from its reference time: the export time of its IPFIX message / NetFlow v9 packet (a
//     record ends before it is exported, and is exported within `max_export_delay_ns`), or the
//     wall clock for live captures (packets are stamped now); files have no reference (they may
//     be of any age);
//   - ClockGuard, in the window thread: a record more than `max_jump_ns` ahead of the newest
//     record end, or that far behind the oldest open window, is held instead of added. While
//     records in range keep arriving, held records older than `confirm_wall_ns` are refused as
//     implausible; when none arrived since a record was held for `confirm_wall_ns`, or `quorum`
//     records agree, the stream itself has moved (a pause in the traffic, an exporter whose
//     clock stepped): the held records are released and the clock follows them.
// Sits between the record queue and the window buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "core/flow_record.h"
#include "pipeline/record_duration.h"

namespace prism::service {

struct TimePlausibility {
  // A record lasting longer is implausible (the same limit as analyze's: --max-record-s).
  int64_t max_record_ns = pipeline::kDefaultMaxRecordNs;
  int64_t max_export_delay_ns = 600'000'000'000;  // end at most this long before export
  int64_t max_clock_skew_ns = 60'000'000'000;     // end at most this long after export / now
};

// No reference time (files).
inline constexpr int64_t kNoReferenceNs = INT64_MIN;

bool PlausibleTime(const FlowRecord& r, int64_t reference_ns, const TimePlausibility& options);

// The export time in an IPFIX message (version 10: header bytes 4-7) or NetFlow v9 packet
// (version 9: bytes 8-11, unix_secs), in ns; kNoReferenceNs for anything else.
int64_t ExportTimeNs(const uint8_t* data, size_t size);

class ClockGuard {
 public:
  struct Options {
    int64_t max_jump_ns = 60'000'000'000;   // the window length
    int64_t confirm_wall_ns = 3'000'000'000;
    size_t quorum = 4096;                    // held records that move the clock at once
    size_t max_held = 1 << 20;               // beyond, refused at once (bounded memory)
  };
  enum class Verdict { kAdd, kHold, kRefuse };
  struct Held {
    FlowRecord record;
    size_t source = 0;
    int64_t wall_ns = 0;
    uint64_t added_before = 0;  // records added before this one was held
  };

  explicit ClockGuard(const Options& options) : options_(options) {}

  // `newest_end_ns`: the buffer's newest record end, `oldest_open_ns`: the start of its oldest
  // open window (INT64_MIN both before the first record). kHold keeps a copy; kRefuse is the
  // caller's to count.
  Verdict Check(const FlowRecord& r, size_t source, int64_t newest_end_ns, int64_t oldest_open_ns,
                int64_t now_wall_ns);
  // Tells the guard a record in range was added: it contests the records held before it. Order
  // of arrival, not wall time, says "before": a read is stamped with one wall time, and records
  // read in the same batch ahead of a held one are not evidence against it (a backlog read at
  // once across a pause in the traffic would refuse the records after the pause).
  void NoteAdded() { ++added_; }

  // Every few hundred ms: moves held records that are now refused into `refused` and, if the
  // stream has moved, those to release into `release` (in arrival order); `behind` says whether
  // the released records are behind the clock (the caller restarts its windows then).
  void Tick(int64_t now_wall_ns, std::vector<Held>* release, bool* behind,
            std::vector<Held>* refused);

  size_t held() const { return held_.size(); }

 private:
  Options options_;
  std::deque<Held> held_;
  bool held_behind_ = false;  // direction of what is held
  uint64_t added_ = 0;  // records in range added so far
};

}  // namespace prism::service
