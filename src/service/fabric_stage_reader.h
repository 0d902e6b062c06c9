// File: service/fabric_stage_reader.h
// serve --role fabric's reading and judging (docs/scale-out.md, the fabric stage): the shards'
// contributions read from LLMPRISM_FABRIC (scaleout/fabric_stream.h) through an ephemeral
// consumer from a position of its own (committed with each judged window, as an analyser's), gathered by
// window (service/fabric_stage.h), merged and judged by the bandwidth rule's own code
// (diagnosis/rules/fabric_evaluation.h). A message that is no contribution is counted and named
// in the log, never silently skipped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "diagnosis/diagnose.h"
#include "scaleout/jetstream.h"
#include "service/fabric_pieces.h"
#include "service/fabric_stage.h"
#include "service/store.h"
#include "service/tracker.h"

namespace prism::service {

struct FabricStageReaderOptions {
  std::string url;   // --nats
  int replicas = 1;  // of the stream, when this process creates it
  int64_t window_ns = 0;
  FabricWindowsOptions windows;
  diagnosis::DiagnosisOptions diagnosis;
};

class FabricStageReader {
 public:
  // From the position the database held (`resumed`), else from the stream's start.
  static StatusOr<std::unique_ptr<FabricStageReader>> Open(
      const FabricStageReaderOptions& options, const std::optional<StreamPosition>& resumed);

  // Judged windows, oldest first, each with the position to commit with it.
  using OnJudged = std::function<void(const FabricVerdict&, const StreamPosition&)>;
  // One fetch (waiting at most `wait`), then every window that is ready judged. An error (the
  // server gone) is retried by the caller, after Reconnect().
  Status Poll(std::chrono::milliseconds wait, const OnJudged& judged);
  Status Reconnect();

  std::string name() const;
  bool resumed() const { return resumed_; }
  int64_t judged_up_to_ns() const { return windows_.judged_up_to_ns(); }
  uint64_t next_sequence() const { return next_sequence_; }
  uint64_t last_sequence() const { return last_sequence_; }

  struct Counters {
    uint64_t received = 0, bytes = 0;  // contributions taken
    uint64_t empty = 0;                // of received: a shard with no record of the window
    uint64_t pieces = 0;               // messages taken (a contribution is one or more)
    uint64_t bad = 0;                  // messages that are no contribution (skipped, logged)
    uint64_t duplicates = 0;           // a shard's window a second time (the first kept)
    uint64_t already_judged = 0;       // for a window judged already (read again, or too late)
    uint64_t windows_judged = 0, windows_incomplete = 0;
    double judge_cpu_seconds = 0;      // merge and judgement, all windows
  };
  const Counters& counters() const { return counters_; }
  size_t pending_windows() const { return windows_.pending_windows(); }

 private:
  FabricStageReader(const FabricStageReaderOptions& options, uint64_t next_sequence,
                    int64_t judged_up_to_ns, bool resumed);
  FabricVerdict Judge(FabricWindows::Ready ready);
  FabricStageReaderOptions options_;
  FabricPieces pieces_;  // of contributions not whole yet
  FabricWindows windows_;
  std::unique_ptr<scaleout::JetStream> js_;
  std::unique_ptr<scaleout::PullConsumer> consumer_;
  uint64_t next_sequence_ = 1, last_sequence_ = 0;
  bool resumed_ = false;
  Counters counters_;
};

}  // namespace prism::service
