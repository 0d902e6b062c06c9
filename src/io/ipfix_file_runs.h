// File: io/ipfix_file_runs.h
// An IPFIX file read in runs of whole messages side by side (one thread per run), with exactly
// what ReadIpfixFile (io/ipfix_file.h) would deliver, count and print. A serial plan walks only
// the message and set headers (a few bytes read per message) and cuts the file at message
// boundaries; each run's reader then decodes its bytes into its own sink. What a run cannot know
// alone comes from the runs before it, in file order: the templates (a later run first learns,
// silently, those of the earlier runs' template sets), the sequence numbers and the first
// problems described (kept by a later run, then followed and printed by the first run's reader
// in run order, ExportDecoder::TakeOverFrom). Files where that is not enough are left to the
// one-pass reader: compressed, cut mid-message or with a message header it would resynchronize
// after, options templates (their records change how later records are read), many observation
// domains. Joining the runs' records in order is the caller's (pipeline/ipfix_read_on_threads.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"
#include "io/ipfix_file_framer.h"

namespace prism::io {

struct IpfixFileRuns {
  std::string path;
  uint64_t file_bytes = 0;
  // Run k covers [starts[k], starts[k + 1]), the last run to the end of the file; starts[0] = 0.
  std::vector<uint64_t> starts;
  // The messages holding template sets, in file order: (offset, length).
  std::vector<std::pair<uint64_t, uint32_t>> template_messages;
  // The fewest bytes a data record takes under any template of the file (SIZE_MAX: none).
  size_t smallest_record_bytes = SIZE_MAX;

  // At most this many records are decoded from run `run`: every record takes at least
  // smallest_record_bytes of it. A bound, not an estimate: a reader may write the run's rows
  // into room of this size (pipeline/ipfix_read_on_threads.h).
  uint64_t MaxRecords(size_t run) const {
    const uint64_t end = run + 1 < starts.size() ? starts[run + 1] : file_bytes;
    return (end - starts[run]) / smallest_record_bytes;
  }
};

// Below this many bytes per run a file is read in one pass: a thread costs more than it saves.
inline constexpr uint64_t kMinIpfixRunBytes = 4 << 20;

// Up to `runs` runs of about equal size and at least `min_run_bytes` each, or nullopt when the
// file is to be read in one pass (above, or too small, or `runs` < 2). Errors: kNotFound (cannot
// open), kDataLoss (read error).
StatusOr<std::optional<IpfixFileRuns>> PlanIpfixFileRuns(
    const std::string& path, int runs, uint64_t min_run_bytes = kMinIpfixRunBytes);

class IpfixRunReader {
 public:
  // Run `run` of `plan` (which must outlive the reader) into `sink`, names into `points`,
  // counters into `stats` (may be null). Readers of different runs share nothing.
  IpfixRunReader(const IpfixFileRuns& plan, size_t run, FlowSink* sink, PointTable* points,
                 Stats* stats);

  // Reads and decodes the run. Errors: kNotFound, kDataLoss (read error).
  Status Read();
  // The first run's reader, after every run is read, for each later run in order: prints its
  // problems as far as the cap allows, follows its sequence numbers, takes its counts.
  void TakeOverFrom(IpfixRunReader* later) { framer_.TakeOverFrom(&later->framer_); }
  // The first run's reader, last: ReadIpfixFile's result for the whole file.
  StatusOr<uint64_t> Finish() { return framer_.Finish(plan_.file_bytes); }

 private:
  Status LearnEarlierTemplates(int fd);

  const IpfixFileRuns& plan_;
  size_t run_;
  IpfixFileFramer framer_;
};

}  // namespace prism::io
