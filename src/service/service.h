// File: service/service.h
// `llmprism serve`: continuous monitoring. Threads and data path:
//
//   UDP collector(s) (ingest/ipfix/udp_collector.h: receiver thread + bounded datagram queue)
//   watched directories (files dropped in are read, then moved to DIR/done/)
//   live capture (service/live_capture.h: libpcap on an interface -> packet decoders -> flows)
//        | one decode thread per source: FlowRecords in batches
//        v
//   RecordQueue (bounded; a full queue drops UDP batches, counted; file readers wait)
//        v
//   window thread: WindowBuffer (sliding windows by event time, bounded reorder allowance)
//        | a due window (if analysis is still busy with the previous one, the older pending window
//        v  is replaced and counted: windows_skipped)
//   analysis thread: Tracker (Analyze + Diagnose, identity/baselines/findings across windows)
//        | -> Store (SQLite WAL, one transaction per window)
//        | -> alerts (service/alerts.h) -> AlertSender thread -> Alertmanager(s), --alertmanager
//        v -> SnapshotHolder (shared_ptr swap)
//   HTTP or HTTPS (service/http_server.h: a bounded pool, connection cap and timeouts around
//   cpp-httplib, its SSLServer with --tls-cert):
//        /api/v1/*, /metrics, / (dashboard) read the snapshot.
//
// Stop() (SIGTERM) stops the sources (pcap_breakloop for captures), drains the queue, analyses the windows that hold data,
// writes them and stops HTTP last.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ip_prefix.h"
#include "core/status.h"
#include "core/topology.h"
#include "pipeline/input_registry.h"
#include "service/clock_guard.h"
#include "service/http_server.h"
#include "service/tracker.h"
#include "service/window_buffer.h"

namespace prism::service {

// Where serve's records go and come from (docs/scale-out.md): everything in one process (the
// default), or collectors and analysers apart with a JetStream stream of record batches between
// them: a collector decodes its sources and publishes, an analyser reads the stream in place of
// sources and analyses windows as the one process does.
// A sharded service's fabric stage (kFabric) reads the shard analysers' fabric contributions in
// place of records and judges switches and links from all of them (service/fabric_stage.h).
enum class ServiceRole { kAll, kCollector, kAnalyser, kFabric };

// An analyser's record batches per fetch (~40 kB each at 4,096 records). 64 read a shard faster
// than 8 (docs/scale-out.md, Throughput of shard analysers), but a lease-taking analyser's
// reading (one request per message, scaleout/jetstream.h) was not checked at 64: 8 stays.
inline constexpr int kDefaultFetchBatches = 8;
inline constexpr int kMaxFetchBatches = 256;

struct StreamRoleOptions {
  ServiceRole role = ServiceRole::kAll;
  std::string url;        // --nats: nats://HOST:PORT, or a cluster's, comma-separated
  std::string stream;     // e.g. LLMPRISM_RECORDS
  std::string subject;    // collector: where it publishes; analyser: what it reads
  int replicas = 1;       // collector: copies of the stream when it creates it
  size_t batch_records = 4096;  // collector: records per published batch
  // analyser: record batches asked for per fetch from the stream (--nats-fetch-batches).
  int fetch_batches = kDefaultFetchBatches;
  std::string id_prefix;  // collector: message ids "<id_prefix>-<n>-<hash>"
  // collector: records on their shard's subject by the recogniser's GPU -> job -> shard map
  // (scaleout/shard_router.h) instead of on `subject`; pair summaries on pairs.<NAME>.
  bool route_by_job = false;
  // analyser: take up to this many shards (records.shard.<n>.>, n < take_shards) by lease
  // (service/shard_lease_source.h) instead of reading `subject`; 0: read `subject`.
  int take_shards = 0;
  std::chrono::milliseconds lease_ttl{3000};  // renewed every lease_ttl / 5
  std::string lease_name;                     // this analyser in the lease bucket
  // analyser of one shard (--fabric-stage): publishes each window's fabric contribution as
  // shard `fabric_shard` and keeps its own switch and link findings out of its findings.
  bool fabric_stage = false;
  int fabric_shard = -1;
  int64_t fabric_piece_bytes = 0;  // largest message of a contribution; 0: the server's limit
  // fabric: the shards whose contributions make a window whole, and how long a window waits
  // for missing ones after its first came.
  int fabric_shards = 0;
  std::chrono::milliseconds fabric_wait{40'000};
};

struct ServiceOptions {
  std::vector<std::string> udp;    // "ADDR:PORT" (IPv6 as [ADDR]:PORT); port 0 = any free port
  std::vector<std::string> sflow_udp;  // sFlow v5 collectors, "ADDR:PORT" as for `udp`
  std::vector<IpPrefix> udp_allowed_sources;  // exporters/agents the collectors take; empty = any
  std::vector<std::string> watch;  // directories
  std::vector<std::string> capture;  // interfaces captured live (libpcap)
  std::string capture_filter;        // BPF applied to every --capture interface
  int capture_snaplen = 256;
  int capture_buffer_bytes = 8 << 20;
  pipeline::ReadOptions read;      // watched files and live captures: flowlet gap, RoCE idle timeout
  std::string http = "127.0.0.1:0";
  std::string db;                  // empty: no durable state
  std::string token;               // empty: no authentication
  std::string topology_path;
  std::string jobs_map_path;        // --jobs-map (io/jobs_map.h); empty: none
  WindowBufferOptions buffer;       // max_bytes / max_window_records come from the memory plan
  TrackerOptions tracker;
  int64_t memory_limit_bytes = 0;   // 0: DefaultMemoryLimit() (service/memory_plan.h)
  TimePlausibility plausibility;    // service/clock_guard.h
  size_t queue_records = 1'000'000;
  size_t udp_queue_datagrams = 4096;
  int64_t idle_flush_ms = 10'000;   // no new record for this long: analyse the open windows
  int analysis_nice = 10;           // added to the analysis thread's nice value (thread_priority.h)
  HttpLimits http_limits;           // pool, connection cap, timeouts (service/http_server.h)
  TlsFiles tls;                     // HTTPS certificate and key; empty: plain HTTP
  // Alertmanagers the findings are posted to as alerts (service/alerts.h); empty: none.
  std::vector<std::string> alertmanager;
  int64_t alert_hold_ns = 0;        // endsAt of a firing alert ahead of now; 0: 3 windows, >= 60 s
  StreamRoleOptions stream;         // --role, --nats...
};

// "ADDR:PORT" or "[V6]:PORT" (port 0-65535) of --ipfix-udp, --sflow-udp and --http; `what` names the option.
StatusOr<std::pair<std::string, uint16_t>> ParseHostPort(const std::string& s, const char* what);

class Service {
 public:
  static StatusOr<std::unique_ptr<Service>> Start(const ServiceOptions& options);
  ~Service();
  // Flushes and stops everything (idempotent).
  void Stop();

  uint16_t http_port() const;
  std::vector<uint16_t> udp_ports() const;

  struct Impl;

 private:
  explicit Service(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace prism::service
