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
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "ingest/ipfix/udp_collector.h"
#include "io/topology_csv.h"
#include "pipeline/input_registry.h"
#include "service/http_api.h"
#include "service/ingest_counters.h"
#include "service/live_capture.h"
#include "service/record_queue.h"
#include "service/store.h"

namespace prism::service {

namespace {

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "ADDR:PORT" or "[V6]:PORT".
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

 private:
  mutable std::mutex mu_;
  PointTable table_;
};

// Collects one source's records into batches for the queue.
class BatchingSink : public FlowSink {
 public:
  static constexpr size_t kBatch = 4096;
  BatchingSink(size_t source, SourceCounters* counters, PointTable* local, SharedPoints* shared,
               RecordQueue* queue, bool blocking)
      : counters_(counters), local_(local), shared_(shared), queue_(queue), blocking_(blocking) {
    batch_.source = source;
    batch_.records.reserve(kBatch);
  }
  void OnRecord(const FlowRecord& r) override {
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
  RecordBatch batch_;
  std::vector<PointId> map_;
};

}  // namespace

struct Service::Impl {
  ServiceOptions options;
  std::optional<Topology> topology;
  std::vector<std::unique_ptr<SourceCounters>> sources;
  SharedPoints points;
  RecordQueue queue;
  PipelineCounters pipeline;
  SnapshotHolder snapshots;
  std::unique_ptr<Store> store;
  std::unique_ptr<Tracker> tracker;

  std::vector<std::unique_ptr<ingest::UdpCollector>> collectors;
  std::vector<PointTable> collector_points;  // one per collector, used by its decode thread
  std::vector<std::unique_ptr<LiveCapture>> captures;
  size_t first_capture_source = 0;
  std::vector<std::thread> source_threads;
  std::atomic<bool> stop_sources{false};
  std::mutex stop_mu;
  std::condition_variable stop_cv;

  std::thread window_thread;
  std::thread analysis_thread;
  std::mutex pending_mu;
  std::condition_variable pending_cv;
  std::optional<Window> pending;
  bool analysis_done = false;

  httplib::Server http;
  std::thread http_thread;
  uint16_t http_port = 0;
  bool stopped = false;

  explicit Impl(const ServiceOptions& o) : options(o), queue(o.queue_records) {}

  void RunUdp(size_t index, ingest::UdpCollector* collector, PointTable* local) {
    SourceCounters* c = sources[index].get();
    BatchingSink sink(index, c, local, &points, &queue, false);
    // The collector was started with a forwarding sink (see Start): records reach `sink` here.
    forward_[index] = &sink;
    Stats stats;
    while (!stop_sources.load()) {
      collector->Drain(std::chrono::milliseconds(100), &stats);
      sink.Flush();
      c->MergeStats(stats);
      stats = Stats();
      c->datagrams = collector->datagrams_received();
    }
    collector->Stop();
    collector->Drain(std::chrono::milliseconds(0), &stats);
    sink.Flush();
    c->MergeStats(stats);
    c->datagrams = collector->datagrams_received();
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
    // Live traffic cannot wait: a full record queue drops the batch (counted).
    BatchingSink sink(index, c, &local, &points, &queue, false);
    auto st = cap->Run(&sink, &local, &stop_sources, [&](const Stats& delta) {
      sink.Flush();
      c->MergeStats(delta);
      c->packets = cap->packets();
      c->kernel_drops = cap->kernel_drops();
    });
    if (!st) fmt::print(stderr, "llmprism serve: capture stopped: {}\n", st.error().message);
  }

  void ReadFile(size_t index, SourceCounters* c, const std::string& path) {
    PointTable local;
    BatchingSink sink(index, c, &local, &points, &queue, true);
    Stats stats;
    // The same readers as `analyze` (zstd for every kind, the capture options).
    auto n = pipeline::InputRegistry::Default().Read(path, options.read, &sink, &local, &stats);
    sink.Flush();
    c->MergeStats(stats);
    ++c->files;
    if (!n) fmt::print(stderr, "llmprism serve: skipped {}: {}\n", path, n.error().message);
  }

  void HandOff(Window&& w, bool blocking) {
    std::unique_lock<std::mutex> lock(pending_mu);
    if (blocking) {
      pending_cv.wait(lock, [&] { return !pending.has_value(); });
    } else if (pending) {
      ++pipeline.windows_skipped;
    }
    pending = std::move(w);
    pending_cv.notify_all();
  }

  void RunWindows() {
    WindowBuffer buffer(options.buffer);
    std::deque<RecordBatch> batches;
    auto last_accept = std::chrono::steady_clock::now();
    while (true) {
      batches.clear();
      const size_t n = queue.PopAll(std::chrono::milliseconds(200), &batches);
      const bool closing = stop_sources.load() && n == 0 && queue.size() == 0;
      bool accepted_any = false;
      for (RecordBatch& b : batches) {
        SourceCounters* c = sources[b.source].get();
        uint64_t ok = 0, late = 0, full = 0;
        for (const FlowRecord& r : b.records) {
          switch (buffer.Add(r)) {
            case WindowBuffer::AddResult::kAccepted: ++ok; break;
            case WindowBuffer::AddResult::kLate: ++late; break;
            case WindowBuffer::AddResult::kFull: ++full; break;
          }
        }
        c->accepted += ok;
        c->dropped_late += late;
        c->dropped_buffer_full += full;
        accepted_any |= ok > 0;
      }
      const auto now = std::chrono::steady_clock::now();
      if (accepted_any) {
        last_accept = now;
      } else if (buffer.started() &&
                 now - last_accept > std::chrono::milliseconds(options.idle_flush_ms)) {
        buffer.Flush();
      }
      if (closing) buffer.Flush();
      Window w;
      while (buffer.TakeDue(&w)) HandOff(std::move(w), closing);
      pipeline.buffer_records = buffer.size();
      if (buffer.started()) pipeline.max_event_ns = buffer.max_end_ns();
      pipeline.next_window_end_ns = buffer.next_end_ns();
      if (closing) break;
    }
  }

  void RunAnalysis() {
    while (true) {
      Window w;
      {
        std::unique_lock<std::mutex> lock(pending_mu);
        pending_cv.wait(lock, [&] { return pending.has_value() || analysis_done; });
        if (!pending) break;
        w = std::move(*pending);
        pending.reset();
        pending_cv.notify_all();
      }
      const PointTable pts = points.Copy();
      Store::WindowWrite write;
      tracker->AnalyzeWindow(w, pts, &write);
      if (store) {
        if (auto st = store->Write(write); !st) {
          ++pipeline.store_errors;
          fmt::print(stderr, "llmprism serve: {}\n", st.error().message);
        }
      }
      auto snap = tracker->BuildSnapshot();
      fmt::print(stderr,
                 "llmprism serve: window {:.0f}-{:.0f} s: {} records, {} jobs, {} findings "
                 "({} new or updated), analysed in {:.2f} s\n",
                 static_cast<double>(w.start_ns) / 1e9, static_cast<double>(w.end_ns) / 1e9,
                 w.records.size(), snap->jobs.size(), snap->findings.size(), write.findings.size(),
                 snap->analysis_seconds);
      snapshots.Publish(std::move(snap));
    }
  }

  // Per collector: where its records go (the decode thread's BatchingSink, set while it runs).
  std::vector<std::atomic<FlowSink*>> forward_;
  struct Forwarder : FlowSink {
    std::atomic<FlowSink*>* to;
    void OnRecord(const FlowRecord& r) override {
      if (FlowSink* s = to->load()) s->OnRecord(r);
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

StatusOr<std::unique_ptr<Service>> Service::Start(const ServiceOptions& options) {
  if (options.buffer.window_ns % options.buffer.step_ns != 0) {
    return MakeError(ErrorCode::kInvalidArgument, "--window must be a multiple of --step");
  }
  auto impl = std::make_unique<Impl>(options);
  Impl& s = *impl;
  s.pipeline.started_wall_ns = WallNs();
  if (!options.topology_path.empty()) {
    Stats stats;
    PRISM_ASSIGN_OR_RETURN(Topology topo, io::ReadTopologyCsv(options.topology_path, &stats));
    s.topology = std::move(topo);
  }
  s.tracker = std::make_unique<Tracker>(options.tracker, s.topology ? &*s.topology : nullptr);
  if (!options.db.empty()) {
    PRISM_ASSIGN_OR_RETURN(s.store, Store::Open(options.db));
    PRISM_ASSIGN_OR_RETURN(LoadedState loaded, s.store->Load());
    s.pipeline.store_bad_rows = loaded.bad_rows;
    fmt::print(stderr, "llmprism serve: {}: resumed {} jobs, {} findings, {} baselines\n",
               options.db, loaded.jobs.size(), loaded.findings.size(), loaded.baselines.size());
    s.tracker->Restore(std::move(loaded));
  }
  s.snapshots.Publish(s.tracker->BuildSnapshot());

  // Sources.
  s.forward_ = std::vector<std::atomic<FlowSink*>>(options.udp.size());
  for (size_t i = 0; i < options.udp.size(); ++i) {
    PRISM_ASSIGN_OR_RETURN(auto hp, ParseHostPort(options.udp[i], "--ipfix-udp"));
    auto fw = std::make_unique<Impl::Forwarder>();
    fw->to = &s.forward_[i];
    s.forwarders_.push_back(std::move(fw));
  }
  s.collector_points.resize(options.udp.size());
  for (size_t i = 0; i < options.udp.size(); ++i) {
    auto hp = *ParseHostPort(options.udp[i], "--ipfix-udp");
    ingest::UdpCollectorOptions co;
    co.bind_address = hp.first;
    co.port = hp.second;
    co.max_queued_datagrams = options.udp_queue_datagrams;
    PRISM_ASSIGN_OR_RETURN(auto collector, ingest::UdpCollector::Start(
                                               co, s.forwarders_[i].get(), &s.collector_points[i]));
    auto c = std::make_unique<SourceCounters>();
    c->kind = "ipfix-udp";
    c->udp_port = collector->port();
    c->name = fmt::format("udp:{}:{}", hp.first, collector->port());
    s.sources.push_back(std::move(c));
    s.collectors.push_back(std::move(collector));
  }
  for (const std::string& dir : options.watch) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      return MakeError(ErrorCode::kNotFound, "--watch {}: not a directory", dir);
    }
    auto c = std::make_unique<SourceCounters>();
    c->kind = "watch";
    c->name = "dir:" + dir;
    s.sources.push_back(std::move(c));
  }

  s.first_capture_source = s.sources.size();
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
    s.sources.push_back(std::move(c));
    s.captures.push_back(std::move(cap));
  }

  // HTTP.
  PRISM_ASSIGN_OR_RETURN(auto http_hp, ParseHostPort(options.http, "--http"));
  ApiContext api;
  api.snapshots = &s.snapshots;
  for (auto& c : s.sources) api.sources.push_back(c.get());
  api.pipeline = &s.pipeline;
  api.queue_capacity = s.queue.capacity();
  api.queue_size = [q = &s.queue] { return q->size(); };
  api.token = options.token;
  api.window_ns = options.buffer.window_ns;
  api.step_ns = options.buffer.step_ns;
  const int threads = std::max(1, options.http_threads);
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.http.set_keep_alive_max_count(100);
  s.http.set_payload_max_length(1 << 16);
  InstallRoutes(&s.http, api);
  int port = http_hp.second;
  if (port == 0) {
    port = s.http.bind_to_any_port(http_hp.first);
  } else if (!s.http.bind_to_port(http_hp.first, port)) {
    port = -1;
  }
  if (port <= 0) {
    return MakeError(ErrorCode::kInternal, "--http {}: cannot bind", options.http);
  }
  s.http_port = static_cast<uint16_t>(port);
  s.http_thread = std::thread([&s] { s.http.listen_after_bind(); });
  for (int i = 0; i < 200 && !s.http.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  // Pipeline threads.
  s.analysis_thread = std::thread([&s] { s.RunAnalysis(); });
  s.window_thread = std::thread([&s] { s.RunWindows(); });
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
  s.analysis_thread.join();
  s.store.reset();  // closes the database (WAL checkpoint)
  s.http.stop();
  if (s.http_thread.joinable()) s.http_thread.join();
}

}  // namespace prism::service
