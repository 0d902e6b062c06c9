#include "service/shard_lease_source.h"

#include <algorithm>

#include <fmt/format.h>

#include "scaleout/record_batch.h"
#include "scaleout/shard_map.h"

namespace prism::service {

namespace {

// Messages stay unacknowledged until the last window holding their records is committed; one
// still unacknowledged after this is delivered again to its holder, which skips it (counted).
constexpr std::chrono::minutes kAckWait{10};

std::string ConsumerName(int shard) { return fmt::format("shard-{}", shard); }

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

StatusOr<std::unique_ptr<ShardLeaseSource>> ShardLeaseSource::Open(
    const StreamSourceOptions& options, const ShardLeaseOptions& leases,
    const std::optional<StreamPosition>& resumed) {
  if (resumed && resumed->stream != options.stream) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the database holds a position of stream {}, not of {}: use another --db",
                     resumed->stream, options.stream);
  }
  std::optional<int64_t> resumed_end;
  if (resumed) resumed_end = resumed->committed_end_ns;
  auto source =
      std::unique_ptr<ShardLeaseSource>(new ShardLeaseSource(options, leases, resumed_end));
  PRISM_ASSIGN_OR_RETURN(source->js_,
                         scaleout::JetStream::Connect(options.url, std::chrono::seconds(5)));
  PRISM_ASSIGN_OR_RETURN(source->lease_js_,
                         scaleout::JetStream::Connect(options.url, std::chrono::seconds(5)));
  source->holder_ = std::make_unique<scaleout::ShardLeases>(
      source->lease_js_.get(), leases.name, leases.shards, leases.ttl, leases.replicas);
  source->lease_thread_ = std::thread([s = source.get()] { s->RunLeases(); });
  return source;
}

ShardLeaseSource::ShardLeaseSource(const StreamSourceOptions& options,
                                   const ShardLeaseOptions& leases,
                                   std::optional<int64_t> resumed_end_ns)
    : options_(options), leases_(leases), resumed_end_ns_(resumed_end_ns) {
  if (resumed_end_ns_) {
    committed_end_ns_ = *resumed_end_ns_;
    confirmed_end_ns_ = *resumed_end_ns_;
  }
}

ShardLeaseSource::~ShardLeaseSource() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (lease_thread_.joinable()) lease_thread_.join();
  if (!holder_) return;
  // The last commits into the leases, then their messages acknowledged, then the shards freed.
  const int64_t end = committed_end_ns_.load();
  auto renewed = holder_->Tick(end, std::chrono::steady_clock::now(), false);
  if (renewed) {
    for (auto& [shard, r] : readings_) Acknowledge(r, end);
  }
  const std::set<int> held = holder_->held();
  if (Status st = holder_->Release(end); !st) {
    fmt::print(stderr, "llmprism serve: shard leases: releasing: {}\n", st.error().message);
  }
  for (int shard : held) {
    fmt::print(stderr, "llmprism serve: released shard {} (committed to {:.0f} s)\n", shard,
               Seconds(end));
  }
}

std::string ShardLeaseSource::name() const {
  return fmt::format("stream:{}/shards by lease", options_.stream);
}

void ShardLeaseSource::RunLeases() {
  const auto period = leases_.ttl / 5;
  // Analysers started together see each other's member keys before they take shards: one TTL,
  // long enough for a member key written in a slower start to show up.
  const auto take_from = std::chrono::steady_clock::now() + leases_.ttl;
  bool failing = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    const int64_t end = committed_end_ns_.load();
    const auto now = std::chrono::steady_clock::now();
    auto events = holder_->Tick(end, now, now >= take_from);
    lock.lock();
    if (!events) {
      if (!failing) {
        fmt::print(stderr, "llmprism serve: shard leases: {}; retrying every {} ms\n",
                   events.error().message, period.count());
      }
      failing = true;
    } else {
      failing = false;
      // A shard lost leaves the windows handed to analysis from now on before the renewal counts
      // (may_hand_off): the window thread must not hand one off still holding it.
      for (const scaleout::ShardLeaseEvent& e : *events) {
        if (e.kind != scaleout::ShardLeaseEvent::Kind::kLost) continue;
        std::lock_guard<std::mutex> sources_lock(sources_mu_);
        begun_.erase(e.shard);
        lost_.insert(e.shard);
      }
      renewed_at_ns_ = now.time_since_epoch().count();
      confirmed_end_ns_ = end;
      shards_held_ = holder_->held().size();
      orphaned_ = holder_->orphaned();
      if (!events->empty()) {
        setting_up_ = true;
        events_.insert(events_.end(), events->begin(), events->end());
        stop_cv_.notify_all();  // a reader holding no shard waits on it
      }
    }
    stop_cv_.wait_for(lock, period, [&] { return stop_ || renew_now_; });
    renew_now_ = false;
  }
}

Status ShardLeaseSource::ApplyLeaseEvents() {
  std::vector<scaleout::ShardLeaseEvent> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    events.swap(events_);
  }
  for (size_t i = 0; i < events.size(); ++i) {
    const scaleout::ShardLeaseEvent& e = events[i];
    if (e.kind == scaleout::ShardLeaseEvent::Kind::kLost) {
      ++leases_lost_;
      readings_.erase(e.shard);  // begun_ and lost_: the lease thread, at once
      fmt::print(stderr, "llmprism serve: LOST shard {}: its lease is held by {} now (not "
                 "renewed within the TTL); its unacknowledged records go to that analyser\n",
                 e.shard, e.other.empty() ? std::string("another analyser") : e.other);
      continue;
    }
    if (Status st = SetUp(e.shard, e.committed_end_ns); !st) {
      // The lease is ours: the shard is set up at the next poll (the caller retries each second).
      std::lock_guard<std::mutex> lock(mu_);
      events_.insert(events_.begin(), events.begin() + static_cast<ptrdiff_t>(i), events.end());
      return MakeError(ErrorCode::kInternal, "setting up shard {}: {}", e.shard,
                       st.error().message);
    }
    ++leases_taken_;
    if (!e.other.empty()) ++takeovers_;
    LogTaken(e, readings_.at(e.shard).next_sequence);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.empty()) setting_up_ = false;
  return OkStatus();
}

void ShardLeaseSource::LogTaken(const scaleout::ShardLeaseEvent& e, uint64_t from_sequence) {
  const int64_t own_end = committed_end_ns_.load();
  if (e.committed_end_ns > 0 && own_end > e.committed_end_ns) {
    // Our windows up to own_end are committed without this shard's records: those of its
    // records that only they hold arrive late here (counted as lost, late).
    fmt::print(stderr, "llmprism serve: shard {} is committed to {:.0f} s, this analyser to "
               "{:.0f} s: its records of the windows between are late here\n", e.shard,
               Seconds(e.committed_end_ns), Seconds(own_end));
  }
  if (e.other.empty()) {
    fmt::print(stderr, "llmprism serve: took shard {} (free; committed to {:.0f} s): reading "
               "from sequence {}\n", e.shard, Seconds(e.committed_end_ns), from_sequence);
  } else {
    fmt::print(stderr, "llmprism serve: took shard {} from {} (its lease unrenewed for "
               "{:.1f} s; committed to {:.0f} s): reading from sequence {}\n", e.shard, e.other,
               static_cast<double>(e.unchanged.count()) / 1e3, Seconds(e.committed_end_ns),
               from_sequence);
  }
}

Status ShardLeaseSource::SetUp(int shard, int64_t committed_end_ns) {
  PRISM_ASSIGN_OR_RETURN(uint64_t floor, js_->AckFloor(options_.stream, ConsumerName(shard)));
  const std::string subject = scaleout::ShardSubjects(shard);
  PRISM_ASSIGN_OR_RETURN(auto consumer, js_->ConsumeFrom(options_.stream, subject,
                                                         ConsumerName(shard), floor + 1,
                                                         kAckWait));
  Reading r;
  r.shard = shard;
  r.consumer = std::move(consumer);
  r.next_sequence = floor + 1;
  r.checkpoint = std::make_unique<scaleout::StreamCheckpoint>(options_.window_ns,
                                                              options_.step_ns, floor + 1);
  {
    std::lock_guard<std::mutex> lock(sources_mu_);
    begun_.erase(shard);  // again from the start: its reading begins anew
    lost_.erase(shard);
  }
  if (committed_end_ns > 0) {
    r.answers_after_ns = committed_end_ns;
    r.first_needed_start_ns = scaleout::StreamCheckpoint::FirstUncommittedStart(
        committed_end_ns, options_.window_ns, options_.step_ns);
    // Written by this thread only, before the shard's records are read.
    analysed_elsewhere_end_ns_ = std::max(analysed_elsewhere_end_ns_.load(), committed_end_ns);
  }
  readings_.erase(shard);
  readings_.emplace(shard, std::move(r));
  last_pending_lookup_ = {};  // the new shard's backlog counts at once
  return OkStatus();
}

Status ShardLeaseSource::Poll(int max_messages, std::chrono::milliseconds wait, FlowSink* sink,
                              PointTable* points, Stats* stats) {
  PRISM_RETURN_IF_ERROR(ApplyLeaseEvents());
  if (!may_hand_off()) {
    // Stalled past most of the TTL (or the leases unreachable): a shard may be another analyser's
    // now, reading the same durable consumer, whose messages a fetch of ours would take from it.
    // Nothing is read until the lease thread's next renewal says which shards are still ours.
    std::unique_lock<std::mutex> lock(mu_);
    stop_cv_.wait_for(lock, wait, [&] { return stop_ || !events_.empty(); });
    return OkStatus();
  }
  if (readings_.empty()) {
    reachable_ = true;
    pending_ = 0;
    std::unique_lock<std::mutex> lock(mu_);
    stop_cv_.wait_for(lock, wait, [&] { return stop_ || !events_.empty(); });
    return OkStatus();
  }
  // Merged by event time: the shard whose records are furthest behind is read first, and the
  // others only when it has nothing more. A shard just taken over (its backlog from the ack floor)
  // is read up to the others before they move on: otherwise their records would carry the
  // windows past its backlog, which would then arrive late.
  std::vector<Reading*> order;
  for (auto& [shard, r] : readings_) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const Reading* a, const Reading* b) {
    return a->latest_start_ns < b->latest_start_ns;
  });
  const int64_t confirmed = confirmed_end_ns_.load();
  for (size_t i = 0; i < order.size(); ++i) {
    Reading& r = *order[i];
    // Only the last one waits: an idle shard must not slow the reading of the others.
    const auto timeout = i + 1 == order.size() ? wait : std::chrono::milliseconds(5);
    auto messages = r.consumer->Fetch(max_messages, timeout);
    if (!messages) {
      // The client reconnects and the subscription comes back with the server: the next poll
      // fetches again from where it was.
      reachable_ = false;
      return std::unexpected(messages.error());
    }
    if (!messages->empty() && origin_ns_.load() == INT64_MAX) {
      if (auto origin = ReadWindowOrigin(js_.get(), &shard_bucket_)) origin_ns_ = *origin;
    }
    Read(r, *messages, sink, points, stats);
    Acknowledge(r, confirmed);
    if (!messages->empty()) break;
  }
  // The others' acknowledgements do not wait for their turn to read.
  for (auto& [shard, r] : readings_) Acknowledge(r, confirmed);
  reachable_ = true;
  LookUpPending();
  return OkStatus();
}

void ShardLeaseSource::Read(Reading& r, std::vector<scaleout::DeliveredMessage>& messages,
                            FlowSink* sink, PointTable* points, Stats* stats) {
  for (scaleout::DeliveredMessage& m : messages) {
    const uint64_t seq = m.stream_sequence();
    if (seq < r.next_sequence || m.deliveries() > 1) ++redelivered_;
    if (seq < r.next_sequence) continue;  // delivered again after its ack wait: read once
    r.next_sequence = seq + 1;
    auto batch = scaleout::DecodeRecordBatchInto(m.data(), points);
    if (!batch) {
      stats->Add(Stat::record_batches_bad);
      fmt::print(stderr, "llmprism serve: shard {} message {} skipped: {}\n", r.shard, seq,
                 batch.error().message);
      r.checkpoint->Read(seq, false, 0);
      r.unacknowledged.emplace(seq, std::move(m));
      continue;
    }
    stats->Add(Stat::record_batches);
    int64_t latest_start = INT64_MIN;
    for (const FlowRecord& rec : batch->records) {
      latest_start = std::max(latest_start, rec.start_ns);
    }
    r.checkpoint->Read(seq, !batch->records.empty(), latest_start);
    r.latest_start_ns = std::max(r.latest_start_ns, latest_start);
    // Each record's shard by its source (held_shards()), in a pass of its own under the lock: the
    // sink below may wait on a full queue, which the window thread drains, and the window thread
    // takes this lock to copy the map.
    if (!batch->records.empty()) {
      std::lock_guard<std::mutex> lock(sources_mu_);
      for (const FlowRecord& rec : batch->records) {
        auto [it, added] = shard_of_source_.try_emplace(rec.src, r.shard);
        if (!added && it->second == r.shard) continue;
        it->second = r.shard;
        ++sources_version_;
      }
    }
    uint64_t skipped = 0;
    for (const FlowRecord& rec : batch->records) {
      if (rec.start_ns < r.first_needed_start_ns) {
        ++skipped;
        continue;
      }
      sink->OnRecord(rec);
    }
    stats->Add(Stat::records_read, batch->records.size() - skipped);
    already_analysed_ += skipped;
    r.unacknowledged.emplace(seq, std::move(m));
    if (!batch->records.empty()) NoteBegun(r);
  }
}

void ShardLeaseSource::NoteBegun(const Reading& r) {
  std::lock_guard<std::mutex> lock(sources_mu_);
  begun_.try_emplace(r.shard, HeldShards::Held{r.shard, r.answers_after_ns});
}

bool ShardLeaseSource::may_hand_off() const {
  const int64_t renewed = renewed_at_ns_.load();
  if (renewed == 0) return true;  // no shard taken yet: nothing of another's to analyse
  const auto since = std::chrono::steady_clock::now().time_since_epoch() -
                     std::chrono::steady_clock::duration(renewed);
  // Another analyser takes a lease once it has seen it unchanged for a whole TTL, and the renewal
  // was written after `renewed` (the time taken before it): before renewed + TTL no other holder
  // has set the shard's consumer up again, so what is fetched or handed off until then is ours.
  // 80% leaves room for a slow renewal (one taking more than the margin would hold everything).
  return since < leases_.ttl * 4 / 5;
}

std::optional<HeldShards> ShardLeaseSource::held_shards() const {
  HeldShards out;
  std::lock_guard<std::mutex> lock(sources_mu_);
  for (const auto& [shard, held] : begun_) out.held.push_back(held);
  out.lost.assign(lost_.begin(), lost_.end());
  // Copied only when an address was added or moved since the last copy: after the first windows
  // every window shares one.
  if (copied_version_ != sources_version_) {
    copied_ = std::make_shared<const std::unordered_map<IpAddr, int, IpAddrHash>>(shard_of_source_);
    copied_version_ = sources_version_;
  }
  out.shard_of_source = copied_;
  return out;
}

void ShardLeaseSource::Acknowledge(Reading& r, int64_t confirmed_end_ns) {
  // Done: every window holding the message's records is committed and the lease says so.
  const uint64_t first_needed = r.checkpoint->ResumeSequence(confirmed_end_ns);
  while (!r.unacknowledged.empty() && r.unacknowledged.begin()->first < first_needed) {
    // A failed acknowledgement leaves the message to be read again by the next holder, whose
    // skip (the lease's committed end) keeps its records from counting twice.
    (void)r.unacknowledged.begin()->second.Ack();
    r.unacknowledged.erase(r.unacknowledged.begin());
  }
}

void ShardLeaseSource::LookUpPending() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_pending_lookup_ < std::chrono::seconds(1)) return;
  last_pending_lookup_ = now;
  uint64_t total = 0;
  for (auto& [shard, r] : readings_) {
    if (auto pending = r.consumer->Pending()) {
      r.pending = *pending;
      if (r.pending == 0) NoteBegun(r);
    }
    total += r.pending;
  }
  pending_ = total;
}

StreamPosition ShardLeaseSource::PositionAfter(int64_t end_ns) {
  // Where this analyser's windows go on after a restart; the shards' own positions are their
  // consumers' and leases'.
  StreamPosition p;
  p.stream = options_.stream;
  p.subject = "shards by lease";
  p.resume_sequence = 0;
  p.committed_end_ns = end_ns;
  return p;
}

void ShardLeaseSource::Committed(int64_t end_ns) {
  int64_t prev = committed_end_ns_.load();
  while (end_ns > prev && !committed_end_ns_.compare_exchange_weak(prev, end_ns)) {
  }
  // Into the leases now rather than at the next renewal (up to TTL/5 later): a holder killed
  // between its database's commit and the lease's has that window analysed again by the next
  // holder, so the gap is kept as short as one round trip to the server.
  {
    std::lock_guard<std::mutex> lock(mu_);
    renew_now_ = true;
  }
  stop_cv_.notify_all();
}

std::vector<PipelineCounters::ShardPosition> ShardLeaseSource::ShardPositions() const {
  std::vector<PipelineCounters::ShardPosition> out;
  for (const auto& [shard, r] : readings_) out.push_back({shard, r.next_sequence, r.pending});
  return out;
}

}  // namespace prism::service
