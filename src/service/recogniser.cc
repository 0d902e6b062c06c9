#include "service/recogniser.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "scaleout/pair_summary.h"
#include "scaleout/record_batch.h"
#include "scaleout/shard_map.h"
#include "service/pair_jobs.h"
#include "service/shard_assignment.h"

namespace prism::service {

namespace {
constexpr char kDurable[] = "llmprism-recogniser";
}  // namespace

StatusOr<std::unique_ptr<Recogniser>> Recogniser::Open(const RecogniserOptions& options) {
  auto r = std::unique_ptr<Recogniser>(new Recogniser(options));
  PRISM_ASSIGN_OR_RETURN(r->js_,
                         scaleout::JetStream::Connect(options.url, std::chrono::seconds(5)));
  const auto patience = std::chrono::seconds(30);
  PRISM_RETURN_IF_ERROR(r->js_->EnsureStream(
      {options.records_stream, {scaleout::kRecordSubjects}, options.replicas}, patience));
  PRISM_RETURN_IF_ERROR(r->js_->EnsureStream(
      {scaleout::kPairStream, {scaleout::kPairSubjects}, options.replicas}, patience));
  PRISM_ASSIGN_OR_RETURN(r->bucket_, scaleout::KeyValueBucket::Open(
                                         r->js_.get(), scaleout::kShardBucket, options.replicas));
  PRISM_RETURN_IF_ERROR(r->LoadMap());
  // The pair graph is rebuilt from the summaries the stream holds; only the last window counts.
  PRISM_ASSIGN_OR_RETURN(r->pairs_,
                         r->js_->ReadFrom(scaleout::kPairStream, scaleout::kPairSubjects, 1));
  PRISM_ASSIGN_OR_RETURN(
      r->unrouted_, r->js_->Consume(options.records_stream, scaleout::kUnroutedSubject, kDurable,
                                    std::chrono::seconds(60)));
  return r;
}

// A restarted recogniser goes on from the map it wrote: jobs keep their shards.
Status Recogniser::LoadMap() {
  PRISM_ASSIGN_OR_RETURN(auto entries, bucket_->ReadAll());
  for (const auto& [key, value] : entries) {
    if (key == scaleout::kWindowOriginKey)
      origin_written_ = true;
    else if (!table_.Apply({key, value, false}))
      ++counters_.bad_messages;
  }
  fmt::print(stderr, "llmprism recognise: {} GPUs mapped in bucket {}\n", table_.size(),
             scaleout::kShardBucket);
  return OkStatus();
}

Status Recogniser::ReadPairs() {
  PRISM_ASSIGN_OR_RETURN(auto messages, pairs_->Fetch(256, std::chrono::milliseconds(50)));
  for (scaleout::DeliveredMessage& m : messages) {
    auto pairs = scaleout::DecodePairSummary(m.data());
    if (!pairs) {
      ++counters_.bad_messages;
      fmt::print(stderr, "llmprism recognise: pair message {} skipped: {}\n", m.stream_sequence(),
                 pairs.error().message);
      continue;
    }
    ++counters_.pair_messages;
    counters_.pair_sightings += pairs->size();
    for (const scaleout::PairSighting& p : *pairs) NotePair(p);
  }
  return OkStatus();
}

Status Recogniser::ReadUnrouted() {
  PRISM_ASSIGN_OR_RETURN(auto messages, unrouted_->Fetch(64, std::chrono::milliseconds(50)));
  for (scaleout::DeliveredMessage& m : messages) {
    auto batch = scaleout::DecodeRecordBatchInto(m.data(), &points_);
    if (!batch) {
      ++counters_.bad_messages;
      fmt::print(stderr, "llmprism recognise: {} message {} skipped: {}\n",
                 scaleout::kUnroutedSubject, m.stream_sequence(), batch.error().message);
      (void)m.Ack();  // no records in it; counted and named above, redelivery would not help
      continue;
    }
    counters_.unrouted_records += batch->records.size();
    for (const FlowRecord& r : batch->records) {
      // Its own pair counts even if its collector's summary has not come yet.
      const int64_t b = r.start_ns / options_.step_ns - (r.start_ns % options_.step_ns < 0);
      NotePair({b * options_.step_ns, r.src, r.dst});
      held_.push_back(r);
    }
    held_messages_.push_back(std::move(m));
  }
  return OkStatus();
}

void Recogniser::NotePair(const scaleout::PairSighting& p) {
  earliest_bucket_ns_ = std::min(earliest_bucket_ns_, p.bucket_start_ns);
  if (!graph_.Add(p)) return;
  const auto now = std::chrono::steady_clock::now();
  if (!changed_) first_change_ = now;
  changed_ = true;
  last_change_ = now;
}

// Once, with the first recognition (before any record is forwarded or routed by the map): where
// the data of the whole service starts.
Status Recogniser::WriteOrigin() {
  if (origin_written_ || earliest_bucket_ns_ == INT64_MAX) return OkStatus();
  PRISM_RETURN_IF_ERROR(
      bucket_->Put(scaleout::kWindowOriginKey, std::to_string(earliest_bucket_ns_)));
  origin_written_ = true;
  fmt::print(stderr, "llmprism recognise: the service's windows start at {} ns\n",
             earliest_bucket_ns_);
  return OkStatus();
}

bool Recogniser::RecognitionDue() const {
  const auto now = std::chrono::steady_clock::now();
  return changed_ &&
         (now - last_change_ >= options_.quiet || now - first_change_ >= options_.longest);
}

Status Recogniser::Recognise() {
  PRISM_RETURN_IF_ERROR(WriteOrigin());
  const auto pairs = graph_.Pairs();
  const auto jobs = JobsOfPairs(pairs, options_.topology, options_.jobs);
  std::map<IpAddr, scaleout::ShardEntry> current(table_.entries().begin(), table_.entries().end());
  const auto assigned = AssignShards(jobs, current, options_.shards);
  size_t changes = 0;
  std::map<std::string, std::pair<int, size_t>> moved;  // job -> (shard, GPUs given to it)
  for (const auto& [gpu, entry] : assigned) {
    if (const scaleout::ShardEntry* old = table_.Find(gpu); old && *old == entry) continue;
    auto& [shard, gpus] = moved[entry.job];
    shard = entry.shard;
    ++gpus;
    PRISM_RETURN_IF_ERROR(bucket_->Put(scaleout::GpuKey(gpu), scaleout::EncodeShardEntry(entry)));
    table_.Set(gpu, entry);
    ++changes;
  }
  changed_ = false;
  ++counters_.recognitions;
  counters_.jobs = jobs.size();
  counters_.map_changes += changes;
  std::map<int, size_t> gpus_by_shard;
  for (const auto& [gpu, entry] : assigned) ++gpus_by_shard[entry.shard];
  fmt::print(stderr,
             "llmprism recognise: {} jobs over {} GPUs from {} pairs; {} map entries "
             "written; GPUs by shard {}\n",
             jobs.size(), assigned.size(), pairs.size(), changes, gpus_by_shard);
  // The job's key is the id its analyser gives it (service/stable_ids.h): the log and the API
  // name a job alike.
  for (const auto& [job, to] : moved) {
    fmt::print(stderr, "llmprism recognise: job {}: {} GPUs to shard {}\n", job, to.second,
               to.first);
  }
  return OkStatus();
}

Status Recogniser::Forward() {
  const std::string no_job = scaleout::NoJobSubject();
  for (const FlowRecord& r : held_) {
    const std::optional<int> shard = table_.ShardOf(r);
    const std::string subject = table_.SubjectOf(r, no_job);  // the collectors' rule
    std::unique_ptr<scaleout::BatchPublisher>& p = publishers_[subject];
    if (!p) {
      p = std::make_unique<scaleout::BatchPublisher>(
          js_.get(), subject, fmt::format("recogniser-{}.{}", kDurable, subject), &points_,
          options_.batch_records);
    }
    p->OnRecord(r);
    ++counters_.forwarded_records;
    if (shard)
      ++counters_.forwarded_by_shard[*shard];
    else
      ++counters_.forwarded_no_job;
  }
  held_.clear();
  for (auto& [subject, p] : publishers_) PRISM_RETURN_IF_ERROR(p->Flush());
  // Published: the unrouted messages are done.
  for (scaleout::DeliveredMessage& m : held_messages_) PRISM_RETURN_IF_ERROR(m.Ack());
  held_messages_.clear();
  fmt::print(stderr, "llmprism recognise: forwarded {} records so far (by shard {}, no job {})\n",
             counters_.forwarded_records, counters_.forwarded_by_shard, counters_.forwarded_no_job);
  return OkStatus();
}

Status Recogniser::Step() {
  PRISM_RETURN_IF_ERROR(ReadPairs());
  PRISM_RETURN_IF_ERROR(ReadUnrouted());
  if (RecognitionDue()) PRISM_RETURN_IF_ERROR(Recognise());
  // Held records are forwarded once the map reflects a graph that holds their pairs.
  if (!changed_ && !held_messages_.empty()) PRISM_RETURN_IF_ERROR(Forward());
  counters_.held_records = held_.size();
  return OkStatus();
}

Status Recogniser::Finish() {
  if (changed_) PRISM_RETURN_IF_ERROR(Recognise());
  if (!held_messages_.empty()) PRISM_RETURN_IF_ERROR(Forward());
  return OkStatus();
}

}  // namespace prism::service
