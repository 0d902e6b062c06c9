// File: service/store.h
// Durable state of `llmprism serve` in one SQLite database (WAL mode): jobs (identity, GPUs,
// layout), per-step summaries, findings (the API's document) and the diagnosis baselines. The
// analysis thread writes one transaction per window, so a crash (kill -9) loses at most the window
// being analysed; WAL with synchronous=NORMAL is durable against process crashes (only an OS crash
// may lose the last transactions). At start the service loads jobs, recent steps, findings and
// baselines back and serves them. Single-threaded: only the analysis thread uses it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "diagnosis/diagnose.h"
#include "service/snapshot.h"

struct sqlite3;

namespace prism::service {

// Where an analyser reading a record stream starts again (scaleout/stream_checkpoint.h): written
// in the same transaction as the window it follows, so the results and the position never
// disagree after a crash.
struct StreamPosition {
  std::string stream, subject;
  uint64_t resume_sequence = 1;
  int64_t committed_end_ns = 0;  // end of the last window committed
};

struct LoadedState {
  std::vector<JobState> jobs;            // with up to kMaxStepsInMemory recent steps each
  std::vector<StoredFinding> findings;   // the most recent kMaxFindings, by first window, id
  diagnosis::BaselineStore baselines;
  uint64_t bad_rows = 0;                 // rows that could not be read back (skipped)
  std::optional<StreamPosition> stream_position;  // an analyser's (serve --role analyser)
};

class Store {
 public:
  // Creates the file and schema if missing. kInvalidArgument when it cannot be opened or another
  // process has it open (PATH.lock), kDataLoss when it is not a database or is corrupt (the file
  // is left untouched), kInternal for other SQLite errors (e.g. locked beyond the busy timeout).
  static StatusOr<std::unique_ptr<Store>> Open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  StatusOr<LoadedState> Load();

  // One window's changes, in one transaction.
  struct WindowWrite {
    std::vector<const JobState*> jobs;                      // changed jobs (without steps)
    std::vector<std::pair<std::string, StepPoint>> steps;   // new step points (job id, point)
    std::vector<const StoredFinding*> findings;             // new or updated findings
    const diagnosis::BaselineStore* baselines = nullptr;
    const StreamPosition* stream_position = nullptr;  // an analyser's, after this window
  };
  Status Write(const WindowWrite& w);

 private:
  Store() = default;
  Status Exec(const char* sql);
  Status AddFindingOrder();  // the findings' first-window column and index, in old stores too
  Status QuickCheck();  // PRAGMA quick_check: kDataLoss naming the first problems
  StatusOr<std::optional<StreamPosition>> LoadStreamPosition();  // meta row, if any
  sqlite3* db_ = nullptr;
  std::string path_;
  int lock_fd_ = -1;  // PATH.lock, flock'ed while open
};

}  // namespace prism::service
