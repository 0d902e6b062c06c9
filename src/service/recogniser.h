// File: service/recogniser.h
// `llmprism recognise` (docs/scale-out.md, Sharding by job): the one stage that needs the global
// pair graph. It reads the collectors' pair summaries (stream LLMPRISM_PAIRS) into a pair graph of
// the last window, recognises jobs in it as serve does (service/pair_jobs.h), assigns each job a
// shard (service/shard_assignment.h) and writes GPU -> job -> shard into the key-value bucket the
// collectors route by. Records the collectors could not route (kUnroutedSubject: endpoints the map
// did not know yet) are held until a recognition that has seen them, then forwarded to their
// shard's subject, or to shard 0's "other" subject when they belong to no job; their messages are
// acknowledged (a durable consumer) only once forwarded, so a restart loses none.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/jobs/job_recognition.h"
#include "core/name_table.h"
#include "core/status.h"
#include "core/topology.h"
#include "scaleout/jetstream.h"
#include "scaleout/key_value.h"
#include "scaleout/record_stream.h"
#include "scaleout/shard_table.h"
#include "service/pair_graph.h"

namespace prism::service {

struct RecogniserOptions {
  std::string url;  // nats://HOST:PORT, or a cluster's, comma-separated
  std::string records_stream = scaleout::kRecordStream;
  int shards = 2;
  int replicas = 1;  // of the streams and the bucket, when created here
  int64_t window_ns = 60'000'000'000, step_ns = 10'000'000'000;  // the analysers' grid
  const Topology* topology = nullptr;
  analysis::JobRecognitionOptions jobs;
  // The graph is recognised once no new pair came for `quiet`, or `longest` after its first
  // change: a burst of new pairs (a job starting) is recognised whole, not piece by piece.
  std::chrono::milliseconds quiet{500}, longest{2000};
  size_t batch_records = 4096;
};

struct RecogniserCounters {
  uint64_t pair_messages = 0, pair_sightings = 0, bad_messages = 0;
  uint64_t recognitions = 0, jobs = 0, map_changes = 0;
  uint64_t unrouted_records = 0, held_records = 0;
  uint64_t forwarded_records = 0, forwarded_no_job = 0;
  std::map<int, uint64_t> forwarded_by_shard;
};

class Recogniser {
 public:
  static StatusOr<std::unique_ptr<Recogniser>> Open(const RecogniserOptions& options);
  // One round: reads what came, recognises when due, forwards held records when recognised.
  Status Step();
  // At shutdown: recognises what is pending and forwards what is held.
  Status Finish();
  const RecogniserCounters& counters() const { return counters_; }
  size_t mapped_gpus() const { return table_.size(); }

 private:
  explicit Recogniser(const RecogniserOptions& options)
      : options_(options), graph_(options.window_ns) {}
  Status LoadMap();
  Status ReadPairs();
  Status ReadUnrouted();
  bool RecognitionDue() const;
  void NotePair(const scaleout::PairSighting& p);
  Status WriteOrigin();
  Status Recognise();
  Status Forward();

  RecogniserOptions options_;
  std::unique_ptr<scaleout::JetStream> js_;
  std::unique_ptr<scaleout::KeyValueBucket> bucket_;
  std::unique_ptr<scaleout::PullConsumer> pairs_, unrouted_;
  PairGraph graph_;
  scaleout::ShardTable table_;
  PointTable points_;
  std::vector<FlowRecord> held_;
  std::vector<scaleout::DeliveredMessage> held_messages_;  // acknowledged once forwarded
  std::map<std::string, std::unique_ptr<scaleout::BatchPublisher>> publishers_;
  bool changed_ = false;
  int64_t earliest_bucket_ns_ = INT64_MAX;  // of everything read: the service's window origin
  bool origin_written_ = false;
  std::chrono::steady_clock::time_point first_change_{}, last_change_{};
  RecogniserCounters counters_;
};

}  // namespace prism::service
