#include "service/service.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "ingest/ipfix/udp_collector.h"
#include "io/jobs_map.h"
#include "io/topology_csv.h"
#include "pipeline/input_registry.h"
#include "service/http_api.h"
#include "service/http_server.h"
#include "service/ingest_counters.h"
#include "service/alert_sender.h"
#include "service/alerts.h"
#include "diagnosis/rules/fabric_contribution_split.h"
#include "service/fabric_publisher.h"
#include "service/fabric_stage_reader.h"
#include "service/clock_guard.h"
#include "service/live_capture.h"
#include "service/loss_tally.h"
#include "service/memory_plan.h"
#include "service/record_queue.h"
#include "scaleout/fabric_stream.h"
#include "scaleout/jetstream.h"
#include "scaleout/record_stream.h"
#include "scaleout/shard_router.h"
#include "service/store.h"
#include "service/thread_priority.h"
#include "service/shard_lease_source.h"
#include "service/stream_source.h"

namespace prism::service {

namespace {

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

namespace {

// Bursts beyond a collector's receive buffer are lost in the kernel (counted: reason "socket"):
// a buffer smaller than asked is said at start, with what to change.
void WarnIfReceiveBufferShort(const std::string& source, const ingest::UdpCollector& collector,
                              int asked_bytes) {
  if (collector.receive_buffer_bytes() >= asked_bytes) return;
  fmt::print(stderr,
             "llmprism serve: {}: the kernel granted a {} KiB receive buffer of the {} KiB asked "
             "(raise net.core.rmem_max, or run with CAP_NET_ADMIN)\n",
             source, collector.receive_buffer_bytes() >> 10, asked_bytes >> 10);
}

}  // namespace

StatusOr<std::pair<std::string, uint16_t>> ParseHostPort(const std::string& s, const char* what) {
  std::string host;
  std::string port;
  if (!s.empty() && s[0] == '[') {
    const size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return MakeError(ErrorCode::kInvalidArgument, "{}: expected [ADDR]:PORT, got '{}'", what, s);
    }
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
  } else {
    const size_t colon = s.rfind(':');
    if (colon == std::string::npos) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: expected ADDR:PORT, got '{}'", what, s);
    }
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
  }
  char* end = nullptr;
  const unsigned long p = std::strtoul(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p > 65535 || host.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: bad address or port in '{}'", what, s);
  }
  return std::make_pair(host, static_cast<uint16_t>(p));
}

namespace {

// Observation points interned by every source's decoder (each has its own PointTable, which is
// single-threaded) are re-interned here, under a lock, into the table analysis reads.
class SharedPoints {
 public:
  PointId Intern(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.Intern(name);
  }
  PointTable Copy() const {
    std::lock_guard<std::mutex> lock(mu_);
    return table_;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.size();
  }

 private:
  mutable std::mutex mu_;
  PointTable table_;
};

// Collects one source's records into batches for the queue, refusing (and counting) records
// whose time is implausible against the source's reference time (service/clock_guard.h).
class BatchingSink : public FlowSink {
 public:
  static constexpr size_t kBatch = 4096;
  enum class Reference { kNone, kExportTime, kWallClock };
  BatchingSink(size_t source, SourceCounters* counters, PointTable* local, SharedPoints* shared,
               RecordQueue* queue, bool blocking, Reference reference,
               const TimePlausibility& plausibility)
      : counters_(counters),
        local_(local),
        shared_(shared),
        queue_(queue),
        blocking_(blocking),
        reference_(reference),
        plausibility_(plausibility) {
    batch_.source = source;
    batch_.records.reserve(kBatch);
  }
  // UDP: the export time of the datagram whose records come next.
  void SetExportTime(int64_t ns) { export_ns_ = ns; }

  void OnRecord(const FlowRecord& r) override {
    const int64_t ref = reference_ == Reference::kExportTime ? export_ns_
                        : reference_ == Reference::kWallClock ? WallNs()
                                                               : kNoReferenceNs;
    if (!PlausibleTime(r, ref, plausibility_)) {
      ++implausible_;
      return;
    }
    FlowRecord g = r;
    if (g.point != kNoPoint) {
      if (g.point >= map_.size()) map_.resize(g.point + 1, kNoPoint);
      PointId& m = map_[g.point];
      if (m == kNoPoint) m = shared_->Intern(local_->Name(g.point));
      g.point = m;
    }
    batch_.records.push_back(g);
    if (batch_.records.size() >= kBatch) Flush();
  }
  void Flush() {
    if (implausible_ > 0) {
      counters_->records += implausible_;  // decoded, then refused
      counters_->dropped_implausible += implausible_;
      implausible_ = 0;
    }
    if (batch_.records.empty()) return;
    const size_t n = batch_.records.size();
    counters_->records += n;
    counters_->last_record_wall_ns = WallNs();
    if (!(blocking_ ? queue_->Push(batch_) : queue_->TryPush(batch_))) {
      counters_->dropped_queue_full += n;
      batch_.records.clear();
    }
  }

 private:
  SourceCounters* counters_;
  PointTable* local_;
  SharedPoints* shared_;
  RecordQueue* queue_;
  bool blocking_;
  Reference reference_;
  TimePlausibility plausibility_;
  int64_t export_ns_ = kNoReferenceNs;
  uint64_t implausible_ = 0;
  RecordBatch batch_;
  std::vector<PointId> map_;
};

}  // namespace

struct Service::Impl {
  ServiceOptions options;

  // Start()'s stages, in the order it runs them (sources are opened between LoadState and
  // StartHttp).
  Status PlanMemoryBudget();
  Status LoadState();
  Status OpenStreamRole();
  Status OpenShardRouter();
  Status OpenFabricStage();
  Status StartHttp();
  void StartThreads();
  std::optional<Topology> topology;
  std::vector<std::unique_ptr<SourceCounters>> sources;
  SharedPoints points;
  RecordQueue queue;
  PipelineCounters pipeline;
  SnapshotHolder snapshots;
  std::unique_ptr<Store> store;
  std::unique_ptr<Tracker> tracker;
  std::unique_ptr<AlertSender> alerts;  // with --alertmanager
  std::optional<StreamPosition> resumed_position;  // the database's, for an analyser
  std::unique_ptr<StreamReader> stream_source;      // --role analyser
  std::unique_ptr<scaleout::JetStream> publish_js;  // --role collector
  std::unique_ptr<scaleout::ShardRouter> router;    // --role collector --route-by-job
  std::unique_ptr<FabricPublisher> fabric_publisher;  // --role analyser --fabric-stage
  std::unique_ptr<FabricStageReader> fabric_reader;   // --role fabric
  bool map_failing = false;                         // the router's map could not be followed
  bool analyser() const { return options.stream.role == ServiceRole::kAnalyser; }
  bool collector() const { return options.stream.role == ServiceRole::kCollector; }
  bool fabric() const { return options.stream.role == ServiceRole::kFabric; }
  ActiveAlerts active_alerts;           // analysis thread only

  std::vector<std::unique_ptr<ingest::UdpCollector>> collectors;
  std::vector<PointTable> collector_points;  // one per collector, used by its decode thread
  std::vector<std::unique_ptr<LiveCapture>> captures;
  size_t first_capture_source = 0;
  std::vector<std::thread> source_threads;
  std::atomic<bool> stop_sources{false};
  std::mutex stop_mu;
  std::condition_variable stop_cv;

  std::vector<SourceCounters*> source_ptrs;  // the same, for TallyLoss
  std::shared_ptr<MemoryAccount> account = std::make_shared<MemoryAccount>();
  MemoryPlan plan;

  std::thread window_thread;
  std::thread analysis_thread;
  struct PendingWindow {
    Window window;
    WindowLoss loss;
    // --fabric-stage: no window to analyse, only the empty contributions of window.empty_before
    // (windows the other shards' clock passed after this shard's latest records).
    bool empties_only = false;
    // --take-shards: the shards held and where records came from, as they were when the window
    // was taken (a shard taken later has no record in it; one lost since is another's).
    std::optional<HeldShards> held_shards;
  };
  std::mutex pending_mu;
  std::condition_variable pending_cv;
  std::optional<PendingWindow> pending;
  bool analysis_done = false;

  // Window thread: loss bookkeeping.
  LossTally loss_at_handoff, loss_at_log;
  uint64_t last_loss_total = 0, last_loss_logged_total = 0;
  std::chrono::steady_clock::time_point last_loss_check{}, last_loss_log{};
  static constexpr std::chrono::seconds kLossLogInterval{10};
  uint64_t late_partial_logged = 0;
  std::chrono::steady_clock::time_point last_late_partial_log{};

  // Analysis thread: changes the database has not taken yet (a failed write), written again.
  struct Unsaved {
    std::set<std::string> jobs;
    std::set<int64_t> findings;
    std::vector<std::pair<std::string, StepPoint>> steps;
    std::optional<StreamPosition> stream_position;  // the latest, replacing earlier ones
    bool pending = false;
  };
  static constexpr size_t kMaxUnsavedSteps = 1'000'000;
  Unsaved unsaved;
  std::chrono::steady_clock::time_point last_store_log{};

  std::unique_ptr<HttpServer> http;  // plain or TLS (MakeHttpServer)
  std::thread http_thread;
  uint16_t http_port = 0;
  bool stopped = false;

  explicit Impl(const ServiceOptions& o)
      : options(o), queue(o.queue_records) {}

  void RunUdp(size_t index, ingest::UdpCollector* collector, PointTable* local) {
    SourceCounters* c = sources[index].get();
    // sFlow records are timed by the wall clock of their datagrams' arrival.
    BatchingSink sink(index, c, local, &points, &queue, false,
                      c->kind == "sflow-udp" ? BatchingSink::Reference::kWallClock
                                             : BatchingSink::Reference::kExportTime,
                      options.plausibility);
    // The collector was started with a forwarding sink (see Start): records reach `sink` here,
    // each datagram's export time first.
    forward_[index] = &sink;
    Stats stats;
    while (!stop_sources.load()) {
      collector->Drain(std::chrono::milliseconds(100), &stats);
      sink.Flush();
      c->MergeStats(stats);
      stats = Stats();
      c->datagrams = collector->datagrams_received();
    c->datagrams_refused = collector->datagrams_refused();
      c->datagrams_refused = collector->datagrams_refused();
    }
    collector->Stop();
    collector->Drain(std::chrono::milliseconds(0), &stats);
    sink.Flush();
    c->MergeStats(stats);
    c->datagrams = collector->datagrams_received();
    c->datagrams_refused = collector->datagrams_refused();
    forward_[index] = nullptr;
  }

  void RunWatch(size_t index, const std::string& dir) {
    SourceCounters* c = sources[index].get();
    const std::filesystem::path done = std::filesystem::path(dir) / "done";
    std::error_code ec;
    std::filesystem::create_directories(done, ec);
    while (!stop_sources.load()) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (!e.is_regular_file() || name.empty() || name[0] == '.') continue;
        // A file still being written: wait until it has not changed for a second.
        auto age = std::filesystem::file_time_type::clock::now() - e.last_write_time();
        if (age < std::chrono::seconds(1)) continue;
        files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& path : files) {
        if (stop_sources.load()) break;
        ReadFile(index, c, path.string());
        std::filesystem::rename(path, done / path.filename(), ec);
        if (ec) {
          fmt::print(stderr, "llmprism serve: cannot move {} to {}: {}\n", path.string(),
                     done.string(), ec.message());
          std::filesystem::remove(path, ec);
        }
      }
      std::unique_lock<std::mutex> lock(stop_mu);
      stop_cv.wait_for(lock, std::chrono::seconds(1), [&] { return stop_sources.load(); });
    }
  }

  void RunCapture(size_t index, LiveCapture* cap) {
    SourceCounters* c = sources[index].get();
    PointTable local;
    // Live traffic cannot wait: a full record queue drops the batch (counted). Packets are
    // stamped by the kernel: records are checked against the wall clock.
    BatchingSink sink(index, c, &local, &points, &queue, false,
                      BatchingSink::Reference::kWallClock, options.plausibility);
    auto st = cap->Run(&sink, &local, &stop_sources, [&](const Stats& delta) {
      sink.Flush();
      c->MergeStats(delta);
      c->packets = cap->packets();
      c->kernel_drops = cap->kernel_drops();
    });
    if (!st) fmt::print(stderr, "llmprism serve: capture stopped: {}\n", st.error().message);
  }

  // --role analyser: the stream's record batches into the record queue, waiting while it is full
  // (the stream holds what is not read yet). A lost server is retried every second, logged once
  // per outage.
  void RunStream(size_t index) {
    SourceCounters* c = sources[index].get();
    PointTable local;
    BatchingSink sink(index, c, &local, &points, &queue, true, BatchingSink::Reference::kNone,
                      options.plausibility);
    bool failing = false;
    while (!stop_sources.load()) {
      Stats stats;
      Status st = stream_source->Poll(options.stream.fetch_batches,
                                      std::chrono::milliseconds(200), &sink, &local, &stats);
      sink.Flush();
      c->MergeStats(stats);
      pipeline.stream_next_sequence = stream_source->next_sequence();
      pipeline.stream_last_sequence = stream_source->last_sequence();
      pipeline.stream_already_analysed = stream_source->records_already_analysed();
      pipeline.stream_reconnects = stream_source->reconnects();
      pipeline.stream_redelivered = stream_source->redelivered();
      if (auto* leased = dynamic_cast<ShardLeaseSource*>(stream_source.get())) {
        pipeline.stream_lease_lag = leased->lag_messages();
        pipeline.shards_held = leased->shards_held();
        pipeline.shard_leases_taken = leased->leases_taken();
        pipeline.shard_takeovers = leased->takeovers();
        pipeline.shard_leases_lost = leased->leases_lost();
        pipeline.SetShardPositions(leased->ShardPositions());
      }
      if (!st) {
        if (!failing) {
          fmt::print(stderr, "llmprism serve: {}: {}; retrying every second\n",
                     stream_source->name(), st.error().message);
        }
        failing = true;
        std::unique_lock<std::mutex> lock(stop_mu);
        stop_cv.wait_for(lock, std::chrono::seconds(1), [&] { return stop_sources.load(); });
      } else if (failing) {
        fmt::print(stderr, "llmprism serve: {}: reading again from sequence {}\n",
                   stream_source->name(), stream_source->next_sequence());
        failing = false;
      }
    }
  }

  // --role collector: in place of windows and analysis, the record queue's batches published to
  // the stream: on one subject, or (--route-by-job) on their shards' subjects by the recogniser's
  // map (scaleout/shard_router.h).
  void RunPublish() {
    PointTable names = points.Copy();
    if (router) {
      router->set_points(&names);
      PublishLoop(*router, &names);
      return;
    }
    scaleout::BatchPublisher publisher(publish_js.get(), options.stream.subject,
                                       options.stream.id_prefix, &names,
                                       options.stream.batch_records);
    PublishLoop(publisher, &names);
  }

  // The map's changes applied before the records are routed. A map that cannot be followed for
  // a while (the stream's node gone) routes by what it knew: records of endpoints it does not
  // know go to the recogniser, which routes them with the newer map.
  void FollowMap(scaleout::BatchPublisher&) {}
  void FollowMap(scaleout::ShardRouter& r) {
    const Status st = r.FollowMap();
    if (!st && !map_failing) {
      fmt::print(stderr, "llmprism serve: collector: {}; routing by the map as it was\n",
                 st.error().message);
    }
    map_failing = !st;
    if (r.map_gpus() != pipeline.shard_map_gpus.load()) {
      fmt::print(stderr, "llmprism serve: collector: routing by a shard map of {} GPUs\n",
                 r.map_gpus());
    }
    pipeline.shard_map_gpus = r.map_gpus();
  }
  void CountRouted(const scaleout::BatchPublisher&) {}
  void CountRouted(const scaleout::ShardRouter& r) {
    pipeline.unrouted_records = r.unrouted_records();
  }

  // While the stream does not take the batches, nothing more is taken from the queue (it fills:
  // UDP and captures then drop, counted; files wait). At shutdown, what is still held after 10 s
  // of retrying is counted as lost (unpublished).
  template <class Publisher>
  void PublishLoop(Publisher& publisher, PointTable* names) {
    std::deque<RecordBatch> batches;
    bool failing = false;
    std::chrono::steady_clock::time_point stop_deadline{};
    while (true) {
      const bool stopping = stop_sources.load();
      if (stopping && stop_deadline == std::chrono::steady_clock::time_point{}) {
        stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      }
      size_t n = 0;
      if (!failing) {
        batches.clear();
        n = queue.PopAll(std::chrono::milliseconds(200), &batches);
        // Records carry ids of the shared table, which only grows: names by the latest copy,
        // taken again only when it has grown.
        if (n > 0 && points.size() != names->size()) {
          *names = points.Copy();
          publisher.set_points(names);
        }
        FollowMap(publisher);
        for (const RecordBatch& b : batches) {
          for (const FlowRecord& r : b.records) publisher.OnRecord(r);
        }
        CountRouted(publisher);
      }
      Status st = publisher.Flush();
      pipeline.published_records = publisher.published_records();
      pipeline.published_batches = publisher.batches();
      pipeline.publish_errors = publisher.errors();
      pipeline.publish_held_records = publisher.held_records();
      if (!st) {
        if (!failing) {
          fmt::print(stderr, "llmprism serve: publishing to {}: {}; holding {} records, retrying\n",
                     options.stream.subject, st.error().message, publisher.held_records());
        }
        failing = true;
        if (stopping && std::chrono::steady_clock::now() > stop_deadline) {
          pipeline.publish_lost_records = publisher.held_records() + queue.size();
          fmt::print(stderr, "llmprism serve: LOST {} records: the stream did not take them\n",
                     pipeline.publish_lost_records.load());
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        continue;
      }
      if (failing) {
        fmt::print(stderr, "llmprism serve: publishing to {} again\n", options.stream.subject);
      }
      failing = false;
      if (stopping && n == 0 && queue.size() == 0) break;
    }
  }

  void ReadFile(size_t index, SourceCounters* c, const std::string& path) {
    PointTable local;
    // Files may be of any age: no reference time, only the duration checks.
    BatchingSink sink(index, c, &local, &points, &queue, true, BatchingSink::Reference::kNone,
                      options.plausibility);
    Stats stats;
    // The same readers as `analyze` (zstd for every kind, the capture options).
    auto n = pipeline::InputRegistry::Default().Read(path, options.read, &sink, &local, &stats);
    sink.Flush();
    c->MergeStats(stats);
    ++c->files;
    if (!n) fmt::print(stderr, "llmprism serve: skipped {}: {}\n", path, n.error().message);
  }

  // Hands a due window to the analysis thread with what was lost since the previous one. Only
  // called when the slot is free, or (`blocking`, at shutdown) after waiting for it.
  void HandOff(Window&& w, bool blocking) {
    const LossTally now = TallyLoss(source_ptrs, pipeline);
    WindowLoss loss;
    loss.lost = now.Since(loss_at_handoff);
    loss.accepted = now.accepted - std::min(now.accepted, loss_at_handoff.accepted);
    loss_at_handoff = now;
    std::unique_lock<std::mutex> lock(pending_mu);
    if (blocking) pending_cv.wait(lock, [&] { return !pending.has_value(); });
    PendingWindow p;
    p.window = std::move(w);
    p.loss = std::move(loss);
    if (stream_source) p.held_shards = stream_source->held_shards();
    pending = std::move(p);
    pending_cv.notify_all();
  }

  // The windows passed with no record of this shard that no window taken yet carries (--fabric-
  // stage, WindowBuffer::TakeEmptyWindows: the other shards' clock passed this shard's latest
  // records, or its records resumed after a gap but their window is not due yet): their empty
  // contributions, published by the analysis thread
  // after the windows handed off before them (the fabric stage takes a later window of a shard
  // as its word that the earlier ones are not coming). No analysis, no commit: an analyser
  // restarted reads its records from its committed end again and passes them again, and the
  // stream drops the copies by their message ids.
  void HandOffEmpties(std::vector<int64_t> ends) {
    fmt::print(stderr, "llmprism serve: {} window(s) ending {:.0f}-{:.0f} s hold no record of this "
               "shard, and no window holding one is due after them: passed empty\n",
               ends.size(), static_cast<double>(ends.front()) / 1e9,
               static_cast<double>(ends.back()) / 1e9);
    PendingWindow p;
    p.window.empty_before = std::move(ends);
    p.empties_only = true;
    p.held_shards = stream_source->held_shards();
    std::unique_lock<std::mutex> lock(pending_mu);
    pending_cv.wait(lock, [&] { return !pending.has_value(); });
    pending = std::move(p);
    pending_cv.notify_all();
  }

  // --fabric-stage, caught up with no record for the idle flush: the newest window end in the
  // fabric stream (the other shards' records have reached it) as this buffer's clock, asked at
  // most once a second. A failed ask is logged (once a minute) and the windows wait, as before.
  void TakeFabricClock(WindowBuffer& buffer, std::chrono::steady_clock::time_point now) {
    if (now - last_clock_ask < std::chrono::seconds(1)) return;
    last_clock_ask = now;
    // Holding shards by lease, the messages of every shard held are this analyser's own.
    std::vector<int> own;
    if (const std::optional<HeldShards> held = stream_source->held_shards()) {
      for (const HeldShards::Held& h : held->held) own.push_back(h.shard);
    } else {
      own.push_back(fabric_publisher->shard());
    }
    StatusOr<std::optional<int64_t>> end = fabric_publisher->NewestWindowEnd(own);
    if (!end) {
      if (now - last_clock_error_log > std::chrono::seconds(60)) {
        fmt::print(stderr, "llmprism serve: cannot read the fabric stream's newest window: {}\n",
                   end.error().message);
        last_clock_error_log = now;
      }
      return;
    }
    if (*end) buffer.MoveClockTo(**end);
  }
  std::chrono::steady_clock::time_point last_clock_ask{}, last_clock_error_log{};

  // Windows analysis may fall behind before due windows are skipped: one window length.
  size_t MaxLagWindows() const {
    return static_cast<size_t>(std::max<int64_t>(1, options.buffer.window_ns /
                                                        std::max<int64_t>(1, options.buffer.step_ns)));
  }

  bool PendingBusy() {
    std::lock_guard<std::mutex> lock(pending_mu);
    return pending.has_value();
  }

  // The window buffer's degradation counters, carried across buffers (the clock guard may start
  // a new one), published for /api/v1/health and /metrics.
  struct BufferTotals {
    uint64_t windows_shortened = 0, records_given_up = 0, windows_skipped = 0, records_skipped = 0;
    uint64_t records_late_partial = 0;
    uint64_t empty_windows_unlisted = 0;
  };
  void PublishBuffer(const WindowBuffer& b, const BufferTotals& carried) {
    pipeline.buffer_records = b.size();
    pipeline.buffer_bytes = b.bytes();
    if (b.started()) pipeline.max_event_ns = b.max_end_ns();
    pipeline.next_window_end_ns = b.next_end_ns();
    const uint64_t shortened = carried.windows_shortened + b.windows_shortened();
    if (shortened > pipeline.windows_shortened.load()) pipeline.last_shortened_wall_ns = WallNs();
    pipeline.windows_shortened = shortened;
    pipeline.records_given_up = carried.records_given_up + b.records_given_up();
    pipeline.windows_skipped = carried.windows_skipped + b.windows_skipped();
    pipeline.records_skipped = carried.records_skipped + b.records_skipped();
    pipeline.records_late_partial = carried.records_late_partial + b.records_late_partial();
    pipeline.fabric_empty_windows_unlisted =
        carried.empty_windows_unlisted + b.empty_windows_unlisted();
    if (const uint64_t unlisted = pipeline.fabric_empty_windows_unlisted.load();
        unlisted > empty_unlisted_logged) {
      fmt::print(stderr, "llmprism serve: LOST the empty fabric contributions of {} windows of a "
                 "gap longer than {} windows ({} in all): the fabric stage judges them without "
                 "this shard\n", unlisted - empty_unlisted_logged, kMaxEmptyWindowsListed,
                 unlisted);
      empty_unlisted_logged = unlisted;
    }
  }
  uint64_t empty_unlisted_logged = 0;

  // Records an analysed window missed (WindowBuffer::records_late_partial) are not lost, but an
  // analysis went without them: said in the log as loss is, at most every kLossLogInterval.
  void ReportLatePartial(std::chrono::steady_clock::time_point now) {
    const uint64_t n = pipeline.records_late_partial.load();
    if (n == late_partial_logged) return;
    if (late_partial_logged != 0 && now - last_late_partial_log < kLossLogInterval) return;
    fmt::print(stderr,
               "llmprism serve: {} records came after an analysed window covering them was taken "
               "({} in all; later windows hold them): that window went without them (raise "
               "--reorder, or --idle-flush when the data pauses)\n",
               n - late_partial_logged, n);
    late_partial_logged = n;
    last_late_partial_log = now;
  }

  // Loss is loud: the wall time of the last loss for /api/v1/health, and a log line at most every
  // kLossLogInterval (the first one at once) while records are being lost.
  void ReportLoss(std::chrono::steady_clock::time_point now) {
    if (now - last_loss_check < std::chrono::seconds(1)) return;
    last_loss_check = now;
    const LossTally t = TallyLoss(source_ptrs, pipeline);
    const uint64_t total = t.Total();
    if (total > last_loss_total) {
      pipeline.last_loss_wall_ns = WallNs();
      if (now - last_loss_log >= kLossLogInterval || last_loss_logged_total == 0) {
        std::string by;
        for (const auto& [reason, n] : t.Since(loss_at_log)) {
          if (n > 0) by += fmt::format("{}{} {}", by.empty() ? "" : ", ", reason, n);
        }
        fmt::print(stderr,
                   "llmprism serve: LOST {} records since the last report ({}); {} lost in all, "
                   "{:.3f}% of {} decoded (GET /api/v1/health)\n",
                   total - last_loss_logged_total, by, total,
                   100.0 * static_cast<double>(total) /
                       static_cast<double>(std::max<uint64_t>(
                           1, t.ingested + t.records.at(kLossSocket) +
                                  t.records.at(kLossCollectorQueue))),
                   t.ingested);
        last_loss_log = now;
        last_loss_logged_total = total;
        loss_at_log = t;
      }
      last_loss_total = total;
    }
  }

  // The records' clock went back by more than a window: analyse what the buffer holds, then
  // start windows again from there (the old buffer's counts carried on).
  void RestartWindows(std::unique_ptr<WindowBuffer>& buffer, BufferTotals& carried) {
    buffer->Flush();
    Window w;
    while (buffer->TakeDue(&w)) HandOff(std::move(w), true);
    carried.windows_shortened += buffer->windows_shortened();
    carried.records_given_up += buffer->records_given_up();
    carried.windows_skipped += buffer->windows_skipped();
    carried.records_skipped += buffer->records_skipped();
    carried.records_late_partial += buffer->records_late_partial();
    carried.empty_windows_unlisted += buffer->empty_windows_unlisted();
    buffer = std::make_unique<WindowBuffer>(options.buffer, account);
  }

  // Hands the due windows to analysis: when closing, all of them (an analyser leaves its open
  // windows to the stream: the next analyser reads their records again and analyses them whole);
  // an analyser, all of them (the stream is the buffer: no window is skipped, reading waits for
  // analysis instead); otherwise one when analysis is free: the oldest due window, or, when
  // analysis fell more than a window length behind, the newest (the others skipped and counted).
  void HandOffDue(WindowBuffer& buffer, bool closing) {
    // Shards taken by lease: not while the leases may have lapsed (a stall past their TTL: a
    // shard may be another analyser's now, and the lease thread learns which at its next renewal).
    if (stream_source && !stream_source->may_hand_off()) return;
    if (closing && !analyser()) buffer.Flush();
    Window w;
    if (closing) {
      while (!analyser() && buffer.TakeDue(&w)) HandOff(std::move(w), true);
    } else if (analyser()) {
      while (buffer.TakeDue(&w)) HandOff(std::move(w), true);
    } else if (!PendingBusy() && buffer.TakeDue(&w, MaxLagWindows())) {
      HandOff(std::move(w), false);
    }
  }

  void RunWindows() {
    auto buffer = std::make_unique<WindowBuffer>(options.buffer, account);
    if (stream_source && stream_source->resumed()) {
      buffer->ResumeAfter(stream_source->committed_end_ns());
    }
    BufferTotals carried;
    ClockGuard::Options go;
    go.max_jump_ns = options.buffer.window_ns;
    ClockGuard guard(go);
    loss_at_handoff = TallyLoss(source_ptrs, pipeline);
    std::deque<RecordBatch> batches;
    std::vector<ClockGuard::Held> release, refused;
    auto last_accept = std::chrono::steady_clock::now();
    // Adds one record that passed the guard; counts it under its source.
    auto add = [&](const FlowRecord& r, SourceCounters* c) {
      switch (buffer->Add(r)) {
        case WindowBuffer::AddResult::kAccepted:
          ++c->accepted;
          guard.NoteAdded();
          return true;
        case WindowBuffer::AddResult::kLate: ++c->dropped_late; break;
        case WindowBuffer::AddResult::kFull: ++c->dropped_buffer_full; break;
      }
      return false;
    };
    while (true) {
      batches.clear();
      const size_t n = queue.PopAll(std::chrono::milliseconds(200), &batches);
      // Set by the reader before it read the records just popped (the queue orders the two).
      if (stream_source) buffer->NoteAnalysedElsewhere(stream_source->analysed_elsewhere_end_ns());
      const bool closing = stop_sources.load() && n == 0 && queue.size() == 0;
      const int64_t wall = WallNs();
      bool accepted_any = false;
      for (RecordBatch& b : batches) {
        SourceCounters* c = sources[b.source].get();
        for (const FlowRecord& r : b.records) {
          const int64_t oldest_open =
              buffer->anchored() ? buffer->next_end_ns() - buffer->options().window_ns : INT64_MIN;
          switch (guard.Check(r, b.source, buffer->started() ? buffer->max_end_ns() : INT64_MIN,
                              oldest_open, wall)) {
            case ClockGuard::Verdict::kAdd: accepted_any |= add(r, c); break;
            case ClockGuard::Verdict::kHold: break;
            case ClockGuard::Verdict::kRefuse: ++c->dropped_implausible; break;
          }
        }
      }
      // Held records: refused as implausible, or released when the stream itself moved.
      release.clear();
      refused.clear();
      bool behind = false;
      guard.Tick(wall, &release, &behind, &refused);
      for (const auto& h : refused) ++sources[h.source]->dropped_implausible;
      if (!release.empty()) {
        fmt::print(stderr,
                   "llmprism serve: the records' clock moved {} by more than a window ({} records "
                   "agree); windows follow it\n",
                   behind ? "back" : "ahead", release.size());
        if (behind) RestartWindows(buffer, carried);
        for (const auto& h : release) accepted_any |= add(h.record, sources[h.source].get());
      }
      pipeline.records_held = guard.held();
      const auto now = std::chrono::steady_clock::now();
      if (accepted_any) {
        last_accept = now;
      } else if (buffer->started() &&
                 now - last_accept > std::chrono::milliseconds(options.idle_flush_ms) &&
                 (!stream_source || stream_source->caught_up())) {
        buffer->Flush();
        if (fabric_publisher) TakeFabricClock(*buffer, now);
      }
      HandOffDue(*buffer, closing);
      if (fabric_publisher && !closing && stream_source->may_hand_off()) {
        if (std::vector<int64_t> ends = buffer->TakeEmptyWindows(); !ends.empty()) {
          HandOffEmpties(std::move(ends));
        }
      }
      PublishBuffer(*buffer, carried);
      ReportLoss(now);
      ReportLatePartial(now);
      if (closing) break;
    }
  }

  // Writes what changed (and whatever an earlier failed write left) in one transaction. A failed
  // write keeps it all for the next attempt (the next window, or the retry timer): what the API
  // serves may be ahead of the database, never the other way, and /api/v1/health says so.
  void SaveToStore(const Store::WindowWrite& write) {
    if (!store) return;
    for (const JobState* j : write.jobs) unsaved.jobs.insert(j->id);
    for (const StoredFinding* f : write.findings) unsaved.findings.insert(f->id);
    unsaved.steps.insert(unsaved.steps.end(), write.steps.begin(), write.steps.end());
    if (write.stream_position) unsaved.stream_position = *write.stream_position;
    if (unsaved.steps.size() > kMaxUnsavedSteps) {  // bounded: the oldest step points go
      unsaved.steps.erase(unsaved.steps.begin(),
                          unsaved.steps.begin() +
                              static_cast<ptrdiff_t>(unsaved.steps.size() - kMaxUnsavedSteps));
    }
    unsaved.pending = true;
    TryWriteUnsaved();
  }

  bool TryWriteUnsaved() {
    if (!store || !unsaved.pending) return true;
    Store::WindowWrite w;
    for (const std::string& id : unsaved.jobs) {
      if (const JobState* j = tracker->FindJob(id)) w.jobs.push_back(j);
    }
    for (int64_t id : unsaved.findings) {
      if (const StoredFinding* f = tracker->FindFinding(id)) w.findings.push_back(f);
    }
    w.steps = unsaved.steps;
    w.baselines = &tracker->baselines();
    if (unsaved.stream_position) w.stream_position = &*unsaved.stream_position;
    auto st = store->Write(w);
    if (st) {
      if (!pipeline.store_ok.load()) {
        fmt::print(stderr, "llmprism serve: database writable again: saved {} findings, {} jobs, "
                           "{} steps held since the failure\n",
                   w.findings.size(), w.jobs.size(), w.steps.size());
      }
      unsaved = Unsaved();
      pipeline.store_ok = true;
      pipeline.SetStoreError("");
      pipeline.store_failing_since_wall_ns = 0;
    } else {
      ++pipeline.store_errors;
      if (pipeline.store_ok.load() ||
          std::chrono::steady_clock::now() - last_store_log > std::chrono::seconds(60)) {
        fmt::print(stderr,
                   "llmprism serve: cannot write the database: {}; keeping {} findings, {} jobs, "
                   "{} steps in memory and retrying\n",
                   st.error().message, w.findings.size(), w.jobs.size(), w.steps.size());
        last_store_log = std::chrono::steady_clock::now();
      }
      if (pipeline.store_ok.load()) pipeline.store_failing_since_wall_ns = WallNs();
      pipeline.store_ok = false;
      pipeline.SetStoreError(st.error().message);
    }
    pipeline.unsaved_findings = unsaved.findings.size();
    pipeline.unsaved_jobs = unsaved.jobs.size();
    pipeline.unsaved_steps = unsaved.steps.size();
    return static_cast<bool>(st);
  }

  // The window's findings as alerts (service/alerts.h), handed to the sender thread.
  void PostAlerts(const Store::WindowWrite& write, int64_t window_end_ns, bool analysed) {
    AlertWindow aw;
    aw.analysed = analysed;
    aw.now_wall_ns = WallNs();
    aw.hold_ns = options.alert_hold_ns > 0
                     ? options.alert_hold_ns
                     : std::max<int64_t>(3 * options.buffer.window_ns, 60'000'000'000);
    for (const StoredFinding* f : write.findings) {
      if (f->last_window_end_ns == window_end_ns) aw.findings.push_back(f);
    }
    AlertUpdate u = NextAlerts(active_alerts, aw);
    active_alerts = std::move(u.active);
    alerts->Post(u.post);
  }

  void AnalyseOne(PendingWindow job) {
    if (job.empties_only) {
      PublishEmptyContributions(job.window.empty_before, job.held_shards);
      return;
    }
    pipeline.analysing_start_ns = job.window.start_ns;
    pipeline.analysing_end_ns = job.window.end_ns;
    const int64_t start_ns = job.window.start_ns, end_ns = job.window.end_ns;
    uint64_t records = job.window.records;
    const bool shortened = job.window.shortened();
    const std::vector<int64_t> empty_before = std::move(job.window.empty_before);
    const PointTable pts = points.Copy();
    // The fence (service/held_shards.h): records of a shard lost since they were read are left
    // to its new holder, which reads them again from the lease's committed end.
    uint64_t left_to_other_holder = 0;
    if (job.held_shards && !job.held_shards->lost.empty()) {
      job.window.left_to_another_holder = [held = &*job.held_shards](const IpAddr& src) {
        return held->LeftToAnotherHolder(src);
      };
    }
    Store::WindowWrite write;
    Status st = tracker->AnalyzeWindow(std::move(job.window), pts, job.loss, &write);
    if (st && job.held_shards && !job.held_shards->lost.empty()) {
      left_to_other_holder = records - tracker->last_window_records();
    }
    if (left_to_other_holder > 0) {
      records -= left_to_other_holder;
      pipeline.records_left_to_other_holder += left_to_other_holder;
      fmt::print(stderr, "llmprism serve: left {} records out of the window ending {:.0f} s: "
                 "shard(s) {} lost since they were read, their new holder analyses them\n",
                 left_to_other_holder, static_cast<double>(end_ns) / 1e9,
                 fmt::join(job.held_shards->lost, ", "));
    }
    // The windows this shard passed empty come before this one's (the fabric stage takes a
    // later window of a shard as its word that the earlier ones are not coming), and are true
    // whether or not this one's analysis succeeded.
    if (fabric_publisher) PublishEmptyContributions(empty_before, job.held_shards);
    if (fabric_publisher && st) PublishFabricContribution(end_ns, job.held_shards);
    // An analyser commits where to read the stream again with the window (also one that failed:
    // the service moves past it, as it does with other sources).
    std::optional<StreamPosition> position;
    if (stream_source) {
      position = stream_source->PositionAfter(end_ns);
      write.stream_position = &*position;
    }
    if (!st) {
      ++pipeline.windows_failed;
      pipeline.last_failed_wall_ns = WallNs();
      fmt::print(stderr, "llmprism serve: {}; serving on\n", st.error().message);
    }
    SaveToStore(write);
    // Shards taken by lease carry the committed end to their next holder: only once it is.
    if (stream_source && !unsaved.pending) stream_source->Committed(end_ns);
    if (alerts) PostAlerts(write, end_ns, static_cast<bool>(st));
    auto snap = tracker->BuildSnapshot();
    fmt::print(stderr,
               "llmprism serve: window {:.0f}-{:.0f} s{}: {} records, {} jobs, {} findings "
               "({} new or updated), analysed in {:.2f} s{}\n",
               static_cast<double>(start_ns) / 1e9, static_cast<double>(end_ns) / 1e9,
               shortened ? " (cut short by the memory budget)" : "", records, snap->jobs.size(),
               snap->findings.size(), write.findings.size(), snap->analysis_seconds,
               job.loss.Total() > 0 ? fmt::format(", {} records lost on the way", job.loss.Total())
                                    : "");
    snapshots.Publish(std::move(snap));
  }

  // --fabric-stage: the window's fabric contribution into the stream before the window is
  // committed. One the stream does not take (retried for FabricPublisherOptions::patience) is
  // counted and logged: the fabric stage judges that window without this shard, and says so.
  // Holding shards by lease, the contribution is published as the parts of the shards answered
  // for in this window (HeldShards::AnsweredIn), each record with the shard it was read from.
  void PublishFabricContribution(int64_t end_ns, const std::optional<HeldShards>& shards) {
    std::optional<diagnosis::FabricContribution> c = tracker->TakeFabricContribution();
    if (!c) return;
    if (!shards) {
      Status st = fabric_publisher->Publish(end_ns, *c);
      PublishFabricCounters();
      if (!st) fmt::print(stderr, "llmprism serve: LOST {}\n", st.error().message);
      return;
    }
    const std::vector<int> answered = shards->AnsweredIn(end_ns);
    // Part k is answered[k]'s; the last part (not published) holds the records of shards this
    // analyser does not answer for here: a shard taken with its earlier windows committed by
    // its previous holder, whose records the overlapping windows still hold.
    std::vector<int32_t> part_of_endpoint;
    part_of_endpoint.reserve(c->endpoint_addr.size());
    for (const IpAddr& a : c->endpoint_addr) {
      int32_t part = int32_t(answered.size());
      if (auto it = shards->shard_of_source->find(a); it != shards->shard_of_source->end()) {
        if (auto k = std::find(answered.begin(), answered.end(), it->second); k != answered.end())
          part = int32_t(k - answered.begin());
      } else {
        part = -1;  // a destination only: its record goes with its source
      }
      part_of_endpoint.push_back(part);
    }
    std::vector<diagnosis::FabricContribution> parts =
        diagnosis::SplitFabricContribution(*c, part_of_endpoint, answered.size() + 1);
    for (size_t k = 0; k < answered.size(); ++k) {
      Status st = fabric_publisher->Publish(end_ns, parts[k], answered[k]);
      if (!st) fmt::print(stderr, "llmprism serve: LOST {}\n", st.error().message);
    }
    if (const size_t left = parts.back().records(); left > 0) {
      pipeline.fabric_records_not_answered += left;
      fmt::print(stderr, "llmprism serve: window ending {:.0f} s: {} records of shards this "
                 "analyser took after their previous holder committed the window are left out "
                 "of its fabric contributions (the previous holder published them)\n",
                 static_cast<double>(end_ns) / 1e9, left);
    }
    PublishFabricCounters();
  }

  // The windows before the next one that held no record of this shard (its jobs paused;
  // WindowBufferOptions::list_empty_windows), each as an empty contribution, in order, before
  // that window is committed: the fabric stage then judges them whole instead of waiting for
  // this shard or calling them incomplete. One the stream does not take is lost as any
  // contribution is (logged, counted; the fabric stage judges it without this shard and says
  // so); the rest of the run are then given up untried rather than each waiting the patience.
  void PublishEmptyContributions(const std::vector<int64_t>& ends,
                                 const std::optional<HeldShards>& shards) {
    for (size_t i = 0; i < ends.size(); ++i) {
      Status st = OkStatus();
      if (!shards) {
        st = fabric_publisher->PublishEmpty(ends[i]);
      } else {
        for (int shard : shards->AnsweredIn(ends[i])) {
          st = fabric_publisher->PublishEmpty(ends[i], shard);
          if (!st) break;
        }
      }
      if (st) continue;
      const uint64_t rest = ends.size() - i - 1;
      fabric_publisher->CountGivenUp(rest);
      fmt::print(stderr, "llmprism serve: LOST the empty {}{}\n", st.error().message,
                 rest == 0 ? std::string()
                           : fmt::format("; the {} empty contributions after it (windows ending "
                                         "up to {}) given up untried", rest, ends.back()));
      break;
    }
    PublishFabricCounters();
  }

  void PublishFabricCounters() {
    pipeline.fabric_published = fabric_publisher->published();
    pipeline.fabric_published_empty = fabric_publisher->published_empty();
    pipeline.fabric_published_pieces = fabric_publisher->pieces();
    pipeline.fabric_published_bytes = fabric_publisher->bytes();
    pipeline.fabric_publish_errors = fabric_publisher->errors();
    pipeline.fabric_publish_given_up = fabric_publisher->given_up();
  }

  // --role fabric: contributions read, windows judged as they are whole (or waited out), each
  // judged window's findings merged by the tracker and committed with the stream position.
  void RunFabric() {
    bool failing = false;
    while (!stop_sources.load()) {
      Status st = fabric_reader->Poll(
          std::chrono::milliseconds(200),
          [this](const FabricVerdict& v, const StreamPosition& position) {
            CommitFabricWindow(v, position);
          });
      const FabricStageReader::Counters& c = fabric_reader->counters();
      pipeline.fabric_received = c.received;
      pipeline.fabric_received_empty = c.empty;
      pipeline.fabric_received_bytes = c.bytes;
      pipeline.fabric_bad = c.bad;
      pipeline.fabric_duplicates = c.duplicates;
      pipeline.fabric_already_judged = c.already_judged;
      pipeline.fabric_windows_judged = c.windows_judged;
      pipeline.fabric_windows_incomplete = c.windows_incomplete;
      pipeline.fabric_judge_cpu_seconds = c.judge_cpu_seconds;
      pipeline.fabric_pending_windows = fabric_reader->pending_windows();
      pipeline.stream_next_sequence = fabric_reader->next_sequence();
      pipeline.stream_last_sequence = fabric_reader->last_sequence();
      if (!st) {
        if (!failing) {
          fmt::print(stderr, "llmprism serve: {}: {}; retrying every second\n",
                     fabric_reader->name(), st.error().message);
        }
        failing = true;
        std::unique_lock<std::mutex> lock(stop_mu);
        stop_cv.wait_for(lock, std::chrono::seconds(1), [&] { return stop_sources.load(); });
        (void)fabric_reader->Reconnect();
      } else if (failing) {
        fmt::print(stderr, "llmprism serve: {}: reading again from sequence {}\n",
                   fabric_reader->name(), fabric_reader->next_sequence());
        failing = false;
      }
    }
  }

  void CommitFabricWindow(const FabricVerdict& v, const StreamPosition& position) {
    Store::WindowWrite write;
    tracker->AddFabricWindow(v, &write);
    write.stream_position = &position;
    SaveToStore(write);
    if (alerts) PostAlerts(write, v.end_ns, true);
    auto snap = tracker->BuildSnapshot();
    fmt::print(stderr,
               "llmprism serve: fabric window {:.0f}-{:.0f} s: {} of {} shards, {} records (by "
               "shard: {}), {} switch and link findings ({} new or updated), judged in {:.3f} s "
               "CPU\n",
               static_cast<double>(v.start_ns) / 1e9, static_cast<double>(v.end_ns) / 1e9,
               v.shards - static_cast<int>(v.missing_shards.size()), v.shards, v.records,
               fmt::join(v.records_by_shard, " "),
               v.findings.size(), write.findings.size(), v.judge_seconds);
    snapshots.Publish(std::move(snap));
  }

  void RunAnalysis() {
    if (std::string why = LowerCallingThreadPriority(options.analysis_nice); !why.empty()) {
      fmt::print(stderr, "llmprism serve: analysis runs at the ingest's priority ({})\n", why);
    }
    while (true) {
      std::optional<PendingWindow> job;
      {
        std::unique_lock<std::mutex> lock(pending_mu);
        // With unsaved changes, wake up to retry the database even when no window comes.
        pending_cv.wait_for(lock, std::chrono::seconds(unsaved.pending ? 5 : 3600),
                            [&] { return pending.has_value() || analysis_done; });
        if (pending) {
          job = std::move(pending);
          pending.reset();
          pending_cv.notify_all();
        } else if (analysis_done) {
          break;
        }
      }
      if (!job) {
        TryWriteUnsaved();
        continue;
      }
      try {
        AnalyseOne(std::move(*job));
      } catch (const std::bad_alloc&) {
        // Out of memory outside the window's own analysis (its snapshot or report): counted,
        // and the service goes on; the tracker's state is whole (each change is one insertion).
        ++pipeline.windows_failed;
        pipeline.last_failed_wall_ns = WallNs();
        fmt::print(stderr, "llmprism serve: out of memory after analysing a window; serving on\n");
      }
      pipeline.analysing_start_ns = 0;
      pipeline.analysing_end_ns = 0;
    }
    if (!TryWriteUnsaved()) {
      fmt::print(stderr, "llmprism serve: {} findings, {} jobs, {} steps could not be saved\n",
                 unsaved.findings.size(), unsaved.jobs.size(), unsaved.steps.size());
    }
  }

  // The UDP sources: IPFIX / NetFlow v9 collectors, then sFlow ones (the same socket, queue and
  // allow-list), each with its counters.
  Status OpenCollectors() {
    struct UdpSpec {
      std::string address;
      bool sflow;
    };
    std::vector<UdpSpec> udp;
    for (const std::string& a : options.udp) udp.push_back({a, false});
    for (const std::string& a : options.sflow_udp) udp.push_back({a, true});
    forward_ = std::vector<std::atomic<BatchingSink*>>(udp.size());
    for (size_t i = 0; i < udp.size(); ++i) {
      PRISM_ASSIGN_OR_RETURN(auto hp, ParseHostPort(udp[i].address,
                                                    udp[i].sflow ? "--sflow-udp" : "--ipfix-udp"));
      auto fw = std::make_unique<Impl::Forwarder>();
      fw->to = &forward_[i];
      forwarders_.push_back(std::move(fw));
    }
    collector_points.resize(udp.size());
    for (size_t i = 0; i < udp.size(); ++i) {
      auto hp = *ParseHostPort(udp[i].address, "");
      ingest::UdpCollectorOptions co;
      co.bind_address = hp.first;
      co.port = hp.second;
      co.max_queued_datagrams = options.udp_queue_datagrams;
      co.allowed_sources = options.udp_allowed_sources;
      if (udp[i].sflow) {
        // Samples are timed by their arrival (sFlow carries no sample time): no export time.
        co.protocol = ingest::UdpProtocol::kSflow;
        co.sflow_flows = options.read.capture.flows;
      } else {
        // Each datagram's export time, for the records that follow (service/clock_guard.h).
        co.on_datagram = [fw = &forward_[i]](std::span<const uint8_t> d) {
          if (BatchingSink* sink = fw->load()) {
            sink->SetExportTime(ExportTimeNs(d.data(), d.size()));
          }
        };
      }
      PRISM_ASSIGN_OR_RETURN(auto collector, ingest::UdpCollector::Start(
                                                 co, forwarders_[i].get(), &collector_points[i]));
      auto c = std::make_unique<SourceCounters>();
      c->kind = udp[i].sflow ? "sflow-udp" : "ipfix-udp";
      c->udp_port = collector->port();
      c->name = fmt::format("{}:{}:{}", udp[i].sflow ? "sflow" : "udp", hp.first, collector->port());
      WarnIfReceiveBufferShort(c->name, *collector, co.receive_buffer_bytes);
      sources.push_back(std::move(c));
      collectors.push_back(std::move(collector));
    }
    return OkStatus();
  }

  // Watched directories (checked to exist) and live captures (opened), each with its counters.
  Status OpenWatchAndCaptures() {
    for (const std::string& dir : options.watch) {
      std::error_code ec;
      if (!std::filesystem::is_directory(dir, ec)) {
        return MakeError(ErrorCode::kNotFound, "--watch {}: not a directory", dir);
      }
      auto c = std::make_unique<SourceCounters>();
      c->kind = "watch";
      c->name = "dir:" + dir;
      sources.push_back(std::move(c));
    }

    first_capture_source = sources.size();
    for (const std::string& iface : options.capture) {
      LiveCaptureOptions co;
      co.interface = iface;
      co.filter = options.capture_filter;
      co.snaplen = options.capture_snaplen;
      co.buffer_bytes = options.capture_buffer_bytes;
      co.flows = options.read.capture.flows;
      PRISM_ASSIGN_OR_RETURN(auto cap, LiveCapture::Open(co));
      auto c = std::make_unique<SourceCounters>();
      c->kind = "capture";
      c->name = "capture:" + iface;
      c->capture_filter = options.capture_filter;
      sources.push_back(std::move(c));
      captures.push_back(std::move(cap));
    }
    return OkStatus();
  }

  // Per collector: where its records go (the decode thread's BatchingSink, set while it runs).
  std::vector<std::atomic<BatchingSink*>> forward_;
  struct Forwarder : FlowSink {
    std::atomic<BatchingSink*>* to;
    void OnRecord(const FlowRecord& r) override {
      if (BatchingSink* s = to->load()) s->OnRecord(r);
    }
  };
  std::vector<std::unique_ptr<Forwarder>> forwarders_;
};

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Service::~Service() { Stop(); }

uint16_t Service::http_port() const { return impl_->http_port; }

std::vector<uint16_t> Service::udp_ports() const {
  std::vector<uint16_t> out;
  for (const auto& c : impl_->collectors) out.push_back(c->port());
  return out;
}

// Memory by budget (service/memory_plan.h): the window buffer's and a window's limits.
Status Service::Impl::PlanMemoryBudget() {
  Impl& s = *this;
  std::string limit_from = "--memory-limit";
  int64_t limit = options.memory_limit_bytes;
  if (limit <= 0) limit = DefaultMemoryLimit(&limit_from);
  if (limit <= 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "cannot read the available memory (/proc/meminfo): give --memory-limit");
  }
  MemoryPlanInputs mi;
  mi.limit_bytes = limit;
  mi.window_ns = options.buffer.window_ns;
  mi.step_ns = options.buffer.step_ns;
  mi.reorder_ns = options.buffer.reorder_ns;
  mi.queue_records = options.queue_records;
  mi.udp_collectors = options.udp.size() + options.sflow_udp.size();
  mi.udp_queue_datagrams = options.udp_queue_datagrams;
  PRISM_ASSIGN_OR_RETURN(s.plan, PlanMemory(mi));
  s.options.buffer.max_bytes = s.plan.buffer_bytes;
  s.options.buffer.max_window_records = s.plan.window_records;
  s.pipeline.memory_limit_bytes = s.plan.limit_bytes;
  s.pipeline.buffer_limit_bytes = s.plan.buffer_bytes;
  s.pipeline.window_record_limit = s.plan.window_records;
  fmt::print(stderr, "llmprism serve: {} ({})\n", s.plan.Describe(), limit_from);
  return OkStatus();
}

// The topology and scheduler jobs when given, the tracker, the state the database holds, and the
// Alertmanager sender; the first snapshot published.
Status Service::Impl::LoadState() {
  Impl& s = *this;
  if (!options.topology_path.empty()) {
    Stats stats;
    PRISM_ASSIGN_OR_RETURN(Topology topo, io::ReadTopologyCsv(options.topology_path, &stats));
    s.topology = std::move(topo);
  }
  TrackerOptions tracker_options = options.tracker;
  if (!options.jobs_map_path.empty()) {
    Stats stats;
    PRISM_ASSIGN_OR_RETURN(io::JobsMap map, io::ReadJobsMap(options.jobs_map_path, &stats));
    fmt::print(stderr,
               "llmprism serve: --jobs-map {}: {} scheduler jobs from {} lines ({} bad lines "
               "skipped, {} pending jobs)\n",
               options.jobs_map_path, map.jobs.size(), map.lines, map.bad_lines,
               map.pending_lines);
    tracker_options.jobs_map = std::make_shared<const io::JobsMap>(std::move(map));
  }
  tracker_options.fabric_stage =
      options.stream.role == ServiceRole::kAnalyser && options.stream.fabric_stage;
  s.tracker = std::make_unique<Tracker>(tracker_options, s.topology ? &*s.topology : nullptr);
  if (!options.db.empty()) {
    PRISM_ASSIGN_OR_RETURN(s.store, Store::Open(options.db));
    PRISM_ASSIGN_OR_RETURN(LoadedState loaded, s.store->Load());
    s.pipeline.store_bad_rows = loaded.bad_rows;
    s.resumed_position = loaded.stream_position;
    fmt::print(stderr, "llmprism serve: {}: resumed {} jobs, {} findings, {} baselines\n",
               options.db, loaded.jobs.size(), loaded.findings.size(), loaded.baselines.size());
    s.tracker->Restore(std::move(loaded));
  }
  s.snapshots.Publish(s.tracker->BuildSnapshot());
  if (!options.alertmanager.empty()) {
    AlertSenderOptions ao;
    ao.urls = options.alertmanager;
    PRISM_ASSIGN_OR_RETURN(s.alerts, AlertSender::Start(ao));
  }
  return OkStatus();
}

// --role collector: the stream to publish to (created if absent). --role analyser: the stream
// source, from the position the database holds; it comes last among the sources.
Status Service::Impl::OpenStreamRole() {
  Impl& s = *this;
  const StreamRoleOptions& so = options.stream;
  s.pipeline.stream_role = so.role == ServiceRole::kCollector  ? "collector"
                           : so.role == ServiceRole::kAnalyser ? "analyser"
                           : so.role == ServiceRole::kFabric   ? "fabric"
                                                               : "";
  if (so.role == ServiceRole::kFabric) return OpenFabricStage();
  if (so.role == ServiceRole::kCollector) {
    PRISM_ASSIGN_OR_RETURN(s.publish_js,
                           scaleout::JetStream::Connect(so.url, std::chrono::seconds(5)));
    scaleout::StreamSpec spec;
    spec.name = so.stream;
    spec.subjects = {scaleout::kRecordSubjects};
    spec.replicas = so.replicas;
    // A collector may start beside a JetStream cluster that is still electing its leader.
    PRISM_RETURN_IF_ERROR(s.publish_js->EnsureStream(spec, std::chrono::seconds(30)));
    if (so.route_by_job) return OpenShardRouter();
    fmt::print(stderr, "llmprism serve: collector: publishing to {} subject {} ({})\n", so.stream,
               so.subject, so.url);
  } else if (so.role == ServiceRole::kAnalyser) {
    if (!s.store) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "--role analyser needs --db: the stream position is committed there with "
                       "each window");
    }
    StreamSourceOptions o;
    o.url = so.url;
    o.stream = so.stream;
    o.subject = so.subject;
    o.window_ns = options.buffer.window_ns;
    o.step_ns = options.buffer.step_ns;
    if (so.take_shards > 0) {
      ShardLeaseOptions lo;
      lo.shards = so.take_shards;
      lo.ttl = so.lease_ttl;
      lo.name = so.lease_name;
      lo.replicas = so.replicas;
      PRISM_ASSIGN_OR_RETURN(s.stream_source, ShardLeaseSource::Open(o, lo, s.resumed_position));
      s.pipeline.stream_leases = true;
      fmt::print(stderr, "llmprism serve: analyser {}: taking up to {} shards by lease (TTL "
                 "{:.1f} s, renewed every {:.1f} s)\n", lo.name, lo.shards,
                 static_cast<double>(lo.ttl.count()) / 1e3,
                 static_cast<double>(lo.ttl.count()) / 5e3);
    } else {
      PRISM_ASSIGN_OR_RETURN(s.stream_source, StreamSource::Open(o, s.resumed_position));
    }
    if (so.fabric_stage) {
      FabricPublisherOptions fo;
      fo.url = so.url;
      fo.replicas = so.replicas;
      fo.shard = so.fabric_shard;
      fo.piece_bytes = so.fabric_piece_bytes;
      PRISM_ASSIGN_OR_RETURN(s.fabric_publisher, FabricPublisher::Open(fo));
      s.pipeline.fabric_publishing = true;
      // The fabric stage needs this shard's word on every window of the service's grid: windows
      // go on on the grid after a pause of its jobs, and those it passed empty are published
      // empty (PublishEmptyContributions).
      options.buffer.list_empty_windows = true;
      fmt::print(stderr, "llmprism serve: analyser: publishing each window's fabric contribution "
                 "{} on {}; switch and link findings are the fabric stage's\n",
                 so.take_shards > 0 ? std::string("as the parts of the shards it holds")
                                    : fmt::format("as shard {}", fo.shard),
                 scaleout::kFabricStream);
    }
    // One shard's analyser places its first window where the whole service's data starts.
    options.buffer.origin_ns = [source = s.stream_source.get()] { return source->origin_ns(); };
    auto c = std::make_unique<SourceCounters>();
    c->kind = "stream";
    c->name = s.stream_source->name();
    s.sources.push_back(std::move(c));
    fmt::print(stderr, "llmprism serve: analyser: reading {} from sequence {}{}\n",
               s.stream_source->name(), s.stream_source->next_sequence(),
               s.stream_source->resumed()
                   ? fmt::format(" (windows up to {:.0f} s committed)",
                                 static_cast<double>(s.stream_source->committed_end_ns()) / 1e9)
                   : std::string());
  }
  return OkStatus();
}

// --role fabric: the shards' fabric contributions read from the position the database holds.
Status Service::Impl::OpenFabricStage() {
  const StreamRoleOptions& so = options.stream;
  if (!store) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "--role fabric needs --db: the stream position is committed there with each "
                     "judged window");
  }
  FabricStageReaderOptions o;
  o.url = so.url;
  o.replicas = so.replicas;
  o.window_ns = options.buffer.window_ns;
  o.windows.shards = so.fabric_shards;
  o.windows.wait = so.fabric_wait;
  o.diagnosis = options.tracker.window.diagnosis;
  o.diagnosis.threads = options.tracker.window.analysis.threads;
  PRISM_ASSIGN_OR_RETURN(fabric_reader, FabricStageReader::Open(o, resumed_position));
  pipeline.fabric_shards = so.fabric_shards;
  fmt::print(stderr, "llmprism serve: fabric: judging the switches and links of {} shards from {} "
             "from sequence {}{} (a window waits {:.0f} s for a missing shard)\n",
             so.fabric_shards, fabric_reader->name(), fabric_reader->next_sequence(),
             fabric_reader->resumed()
                 ? fmt::format(" (windows up to {:.0f} s judged)",
                               static_cast<double>(fabric_reader->judged_up_to_ns()) / 1e9)
                 : std::string(),
             static_cast<double>(so.fabric_wait.count()) / 1e3);
  return OkStatus();
}

// --route-by-job: records by the recogniser's shard map, pair summaries on pairs.<NAME> for a
// collector publishing records.NAME.
Status Service::Impl::OpenShardRouter() {
  const StreamRoleOptions& so = options.stream;
  scaleout::ShardRouterOptions ro;
  ro.id_prefix = so.id_prefix;
  ro.pair_subject = "pairs." + so.subject.substr(std::string_view("records.").size());
  ro.batch_records = so.batch_records;
  ro.step_ns = options.buffer.step_ns;
  ro.window_ns = options.buffer.window_ns;
  ro.replicas = so.replicas;
  PRISM_ASSIGN_OR_RETURN(router, scaleout::ShardRouter::Open(publish_js.get(), ro, nullptr));
  fmt::print(stderr, "llmprism serve: collector: publishing to {} by job (shard map: bucket {}), "
             "pair summaries on {} ({})\n", so.stream, scaleout::kShardBucket, ro.pair_subject,
             so.url);
  return OkStatus();
}

// The API, /metrics and the dashboard: routes installed, the port bound (a bind that fails stops
// the start) and the server's thread started.
Status Service::Impl::StartHttp() {
  Impl& s = *this;
  PRISM_ASSIGN_OR_RETURN(auto http_hp, ParseHostPort(options.http, "--http"));
  ApiContext api;
  api.snapshots = &s.snapshots;
  for (auto& c : s.sources) api.sources.push_back(c.get());
  api.pipeline = &s.pipeline;
  api.has_store = s.store != nullptr;
  for (auto& c : s.sources) s.source_ptrs.push_back(c.get());
  api.queue_capacity = s.queue.capacity();
  api.queue_size = [q = &s.queue] { return q->size(); };
  api.token = options.token;
  api.window_ns = options.buffer.window_ns;
  api.step_ns = options.buffer.step_ns;
  api.http = &s.http->counters();
  api.http_limits = s.http->limits();
  api.alerts = s.alerts.get();
  httplib::Server& http = s.http->server();
  InstallRoutes(&http, api);
  int port = http_hp.second;
  if (port == 0) {
    port = http.bind_to_any_port(http_hp.first);
  } else if (!http.bind_to_port(http_hp.first, port)) {
    port = -1;
  }
  if (port <= 0) {
    return MakeError(ErrorCode::kInternal, "--http {}: cannot bind", options.http);
  }
  s.http_port = static_cast<uint16_t>(port);
  s.http_thread = std::thread([&http] { http.listen_after_bind(); });
  for (int i = 0; i < 200 && !http.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return OkStatus();
}

// The analysis and window threads, and one thread per source.
void Service::Impl::StartThreads() {
  Impl& s = *this;
  if (s.collector()) {
    // Windows and analysis are the analysers' (the one thread that drains the queue publishes).
    s.window_thread = std::thread([&s] { s.RunPublish(); });
  } else if (s.fabric()) {
    // No records: one thread reads the contributions and judges their windows.
    s.window_thread = std::thread([&s] { s.RunFabric(); });
  } else {
    s.analysis_thread = std::thread([&s] { s.RunAnalysis(); });
    s.window_thread = std::thread([&s] { s.RunWindows(); });
  }
  if (s.stream_source) {
    const size_t index = s.sources.size() - 1;  // the stream is the last source
    s.source_threads.emplace_back([&s, index] { s.RunStream(index); });
  }
  for (size_t i = 0; i < s.collectors.size(); ++i) {
    s.source_threads.emplace_back(
        [&s, i] { s.RunUdp(i, s.collectors[i].get(), &s.collector_points[i]); });
  }
  for (size_t k = 0; k < options.watch.size(); ++k) {
    const size_t index = s.collectors.size() + k;
    s.source_threads.emplace_back([&s, index, dir = options.watch[k]] { s.RunWatch(index, dir); });
  }
  for (size_t k = 0; k < s.captures.size(); ++k) {
    const size_t index = s.first_capture_source + k;
    s.source_threads.emplace_back([&s, index, k] { s.RunCapture(index, s.captures[k].get()); });
  }
}

StatusOr<std::unique_ptr<Service>> Service::Start(const ServiceOptions& options) {
  if (options.buffer.window_ns % options.buffer.step_ns != 0) {
    return MakeError(ErrorCode::kInvalidArgument, "--window must be a multiple of --step");
  }
  auto impl = std::make_unique<Impl>(options);
  Impl& s = *impl;
  s.pipeline.started_wall_ns = WallNs();
  // The HTTP server first: a certificate or key it cannot use stops the start before anything
  // else is opened or bound.
  PRISM_ASSIGN_OR_RETURN(s.http, MakeHttpServer(options.http_limits, options.tls));

  PRISM_RETURN_IF_ERROR(s.PlanMemoryBudget());
  PRISM_RETURN_IF_ERROR(s.LoadState());

  PRISM_RETURN_IF_ERROR(s.OpenCollectors());
  PRISM_RETURN_IF_ERROR(s.OpenWatchAndCaptures());

  PRISM_RETURN_IF_ERROR(s.OpenStreamRole());
  PRISM_RETURN_IF_ERROR(s.StartHttp());
  s.StartThreads();
  return std::unique_ptr<Service>(new Service(std::move(impl)));
}

void Service::Stop() {
  if (!impl_ || impl_->stopped) return;
  Impl& s = *impl_;
  s.stopped = true;
  {
    std::lock_guard<std::mutex> lock(s.stop_mu);
    s.stop_sources = true;
  }
  s.stop_cv.notify_all();
  for (auto& cap : s.captures) cap->Break();
  for (std::thread& t : s.source_threads) t.join();
  s.queue.Close();
  s.window_thread.join();  // drains the queue and hands every window with data to analysis
  {
    std::lock_guard<std::mutex> lock(s.pending_mu);
    s.analysis_done = true;
  }
  s.pending_cv.notify_all();
  if (s.analysis_thread.joinable()) s.analysis_thread.join();
  s.stream_source.reset();  // every window committed: shards taken by lease are freed
  if (s.alerts) s.alerts->Stop();  // one last attempt at what is waiting, bounded by timeouts
  s.store.reset();  // closes the database (WAL checkpoint)
  if (s.http) s.http->server().stop();
  if (s.http_thread.joinable()) s.http_thread.join();
}

}  // namespace prism::service
