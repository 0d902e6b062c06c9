// File: scaleout/stream_checkpoint.h
// Where an analyser reading record batches from a stream (scaleout/record_stream.h) starts again
// after a restart, so that every window is analysed once and whole.
//
// The analyser does not rely on the stream's acknowledgements: a one-node JetStream loses recent
// ones in a crash (docs/scale-out.md), and a window needs records of several messages. Instead
// it reads from a stream sequence of its own, committed in the same database transaction as each
// window's results. A message is done once every window holding one of its records is committed:
// windows slide by one step over buckets of one step (by record start), so a record starting at t
// is last held by the window ending at floor(t / step) * step + window. After the windows up to
// E are committed, a restart reads again from the first message some later window still needs;
// records of those messages that only committed windows hold (start before E + step - window)
// are skipped, so the windows after E see exactly the records they would have seen.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

namespace prism::scaleout {

class StreamCheckpoint {
 public:
  StreamCheckpoint(int64_t window_ns, int64_t step_ns, uint64_t first_sequence);

  // A message read, with the latest start of its records (a message without records is done).
  void Read(uint64_t sequence, bool has_records, int64_t latest_start_ns);
  // The windows ending at or before `committed_end_ns` are committed: the first sequence a
  // restart must read again (one past the last message read when none is still needed).
  uint64_t ResumeSequence(int64_t committed_end_ns);
  // The end of the last window that holds a record starting at `start_ns`.
  int64_t LastWindowEnd(int64_t start_ns) const;
  // Records starting before this are held only by windows ending at or before `committed_end_ns`.
  static int64_t FirstUncommittedStart(int64_t committed_end_ns, int64_t window_ns,
                                       int64_t step_ns) {
    return committed_end_ns + step_ns - window_ns;
  }
  size_t open_messages() const;

 private:
  const int64_t window_ns_, step_ns_;
  mutable std::mutex mu_;  // the reader thread reads, the analysis thread commits
  std::map<uint64_t, int64_t> open_;  // sequence -> end of the last window holding its records
  uint64_t next_sequence_;
};

}  // namespace prism::scaleout
