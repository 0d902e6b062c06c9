// File: apps/llmprism/serve_cmd.cc
// `llmprism serve --ipfix-udp ADDR:PORT [--sflow-udp ADDR:PORT] [--watch DIR]
//  [--capture IFACE [--capture-filter BPF]] [--window 60] [--step 10] [--http ADDR:PORT]
//  [--db FILE.sqlite] [--topology FILE] [--token-file F] [--tls-cert F --tls-key F] ...`: continuous monitoring (service/service.h,
// docs/api.md). Binds 127.0.0.1 unless told otherwise. Runs until SIGTERM or SIGINT, then stops the
// sources, analyses the windows that hold data, writes them to the database and exits 0.
// --ready-file writes {"http": PORT, "udp": [PORT...]} once everything listens (for scripts and
// tests that ask for port 0).
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <expected>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capture_options.h"
#include "cli_checks.h"
#include "record_options.h"
#include "service/alert_sender.h"
#include "service/memory_plan.h"
#include "scaleout/fabric_stream.h"
#include "scaleout/record_stream.h"
#include "scaleout/shard_lease.h"
#include "service/service.h"

namespace {

struct ServeArgs {
  std::vector<std::string> udp;
  std::vector<std::string> sflow_udp;
  std::vector<std::string> exporters;  // --exporter-allow prefixes
  std::vector<std::string> watch;
  std::vector<std::string> capture;
  std::string capture_filter;
  int capture_snaplen = 256;
  int capture_buffer_mb = 8;
  double window_s = 60, step_s = 10, reorder_s = 5, idle_flush_s = 10, history_s = 600;
  std::string http = "127.0.0.1:8080";
  std::string db;
  std::string topology;
  std::string jobs_map;
  std::string token;
  bool token_given = false;  // --token on the command line, even empty
  std::string token_file;
  std::string tls_cert, tls_key;  // HTTPS
  int http_threads = 8;
  int http_max_connections = 64;
  double http_idle_s = 5, http_request_s = 10;
  std::string ready_file;
  std::vector<std::string> alertmanager;
  double k = 3;
  int threads = 0;
  std::string memory_limit;  // empty: half of what is available (service/memory_plan.h)
  RecordCliArgs record;  // --max-record-s
  size_t queue_records = 1'000'000;
  int analysis_nice = 10;
  size_t udp_queue_datagrams = 4096;
  CaptureCliArgs capture_flows;  // --capture and watched pcaps: flowlet gap, RoCE idle timeout
  // Scale-out roles (docs/scale-out.md).
  std::string role = "all";
  std::string nats;
  std::string nats_stream = prism::scaleout::kRecordStream;
  std::string nats_subject;  // default by role
  int nats_replicas = 1;
  size_t nats_batch = 4096;
  int nats_fetch_batches = 0;  // analyser; 0: the default (service.h kDefaultFetchBatches)
  bool route_by_job = false;
  int take_shards = 0;     // analyser: shards taken by lease; 0: read --nats-subject
  double lease_ttl_s = 3;
  bool fabric_stage = false;  // analyser of one shard: contributions to the fabric stage
  int64_t fabric_piece_kb = 0;  // 0: as large as the server takes
  int shards = 0;             // --role fabric: the shards whose contributions make a window
  double fabric_wait_s = 0;   // --role fabric: 0: two window lengths
};

// 127.0.0.0/8, ::1 and "localhost": the addresses only this machine reaches.
bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// The bearer token: --token-file, else --token, else $LLMPRISM_TOKEN; "" for none. An empty
// one is refused wherever it comes from: it would turn authentication off without anyone meaning
// it. The error says which source was wrong.
std::expected<std::string, std::string> ReadToken(const ServeArgs& args) {
  std::string token;
  const char* env_token = std::getenv("LLMPRISM_TOKEN");
  if (!args.token_file.empty()) {
    std::ifstream in(args.token_file);
    if (!in) {
      return std::unexpected(fmt::format("--token-file {}: cannot read it ({})", args.token_file,
                                         std::strerror(errno)));
    }
    std::getline(in, token);
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
      token.pop_back();
    }
    if (token.empty()) {
      return std::unexpected(
          fmt::format("--token-file {}: the first line is empty", args.token_file));
    }
  } else if (args.token_given) {
    if (args.token.empty()) {
      return std::unexpected(std::string(
          "--token is empty: give a token, or leave --token out to serve without "
          "authentication"));
    }
    token = args.token;
    fmt::print(stderr,
               "llmprism serve: warning: --token on the command line is visible to every user "
               "of this machine (ps); prefer --token-file or LLMPRISM_TOKEN\n");
  } else if (env_token != nullptr) {
    token = env_token;
    if (token.empty()) {
      return std::unexpected(std::string(
          "LLMPRISM_TOKEN is set but empty: unset it to serve without authentication"));
    }
  }
  return token;
}

// --http reachable from other machines: say what is exposed, and what would close it.
void WarnIfExposed(const ServeArgs& args, const std::string& token) {
  const bool tls = !args.tls_cert.empty();
  if (token.empty() && !tls) {
    fmt::print(stderr,
               "llmprism serve: warning: --http {} is reachable from other machines, with no "
               "token and no TLS: anyone who can connect reads the API, in clear text (give "
               "--token-file, and --tls-cert with --tls-key)\n",
               args.http);
  } else if (token.empty()) {
    fmt::print(stderr,
               "llmprism serve: warning: --http {} is reachable from other machines and no "
               "token is set: anyone who can connect reads the API (give --token-file)\n",
               args.http);
  } else if (!tls) {
    fmt::print(stderr,
               "llmprism serve: warning: --http {} is reachable from other machines without "
               "TLS: the token and the API travel in clear text (give --tls-cert and "
               "--tls-key)\n",
               args.http);
  }
}

// The ports, written to `tmp` and renamed to `ready_file`: whoever waits for the file never reads
// half of it.
prism::Status WriteReadyFile(const std::string& ready_file, const std::string& tmp,
                             const prism::service::Service& service) {
  std::ofstream out(tmp, std::ios::trunc);
  out << fmt::format("{{\"http\": {}, \"udp\": [{}]}}\n", service.http_port(),
                     fmt::join(service.udp_ports(), ", "));
  out.close();
  std::error_code ec;
  if (out.fail()) ec = std::error_code(errno, std::generic_category());
  if (!ec) std::filesystem::rename(tmp, ready_file, ec);
  if (ec) {
    return prism::MakeError(prism::ErrorCode::kInternal, "--ready-file {}: {}", ready_file,
                            ec.message());
  }
  return prism::OkStatus();
}

// Alertmanagers, TLS, HTTP limits, windows, memory, queues and analysis from the flags; the
// message of the first that is wrong.
std::optional<std::string> SetLimitsAndAnalysis(const ServeArgs& args,
                                                prism::service::ServiceOptions* opts) {
  prism::service::ServiceOptions& o = *opts;
  for (const std::string& url : args.alertmanager) {
    if (auto u = prism::service::ParseAlertmanagerUrl(url); !u) return u.error().message;
  }
  o.alertmanager = args.alertmanager;
  o.tls.cert_file = args.tls_cert;
  o.tls.key_file = args.tls_key;
  o.http_limits.threads = args.http_threads;
  o.http_limits.max_connections = args.http_max_connections;
  o.http_limits.idle_timeout_ms = std::llround(args.http_idle_s * 1e3);
  o.http_limits.request_timeout_ms = std::llround(args.http_request_s * 1e3);
  o.buffer.window_ns = std::llround(args.window_s * 1e9);
  o.buffer.step_ns = std::llround(args.step_s * 1e9);
  o.buffer.reorder_ns = std::llround(args.reorder_s * 1e9);
  if (!args.memory_limit.empty()) {
    auto bytes = prism::service::ParseByteSize(args.memory_limit);
    if (!bytes) return "--memory-limit: " + bytes.error().message;
    o.memory_limit_bytes = *bytes;
  }
  o.plausibility.max_record_ns = args.record.max_record_ns();
  if (o.buffer.step_ns <= 0 || o.buffer.window_ns % o.buffer.step_ns != 0) {
    return std::string("--window must be a whole multiple of --step");
  }
  o.queue_records = args.queue_records;
  o.udp_queue_datagrams = args.udp_queue_datagrams;
  o.idle_flush_ms = std::llround(args.idle_flush_s * 1e3);
  o.analysis_nice = args.analysis_nice;
  o.tracker.window_ns = o.buffer.window_ns;
  o.tracker.step_ns = o.buffer.step_ns;
  o.tracker.history_ns = std::llround(args.history_s * 1e9);
  o.read = ToReadOptions(args.capture_flows);
  o.tracker.window.diagnosis.k = args.k;
  o.tracker.window.analysis.threads =
      args.threads > 0 ? args.threads
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency() / 2));
  return std::nullopt;
}

// --role and the stream it publishes to or reads from; the message of what is wrong.
std::optional<std::string> SetStreamRole(const ServeArgs& args,
                                         prism::service::ServiceOptions* opts) {
  using prism::service::ServiceRole;
  prism::service::StreamRoleOptions& so = opts->stream;
  const bool sources = !args.udp.empty() || !args.sflow_udp.empty() || !args.watch.empty() ||
                       !args.capture.empty();
  so.role = args.role == "collector"  ? ServiceRole::kCollector
            : args.role == "analyser" ? ServiceRole::kAnalyser
            : args.role == "fabric"   ? ServiceRole::kFabric
                                      : ServiceRole::kAll;
  if (args.take_shards > 0 && so.role != ServiceRole::kAnalyser) {
    return std::string("--take-shards is for --role analyser");
  }
  if (args.fabric_stage && so.role != ServiceRole::kAnalyser) {
    return std::string("--fabric-stage is for --role analyser");
  }
  if (args.nats_fetch_batches > 0 && so.role != ServiceRole::kAnalyser) {
    return std::string("--nats-fetch-batches is for --role analyser");
  }
  if (args.fabric_piece_kb > 0 && !args.fabric_stage) {
    return std::string("--fabric-piece-kb is for --fabric-stage");
  }
  if ((args.shards > 0 || args.fabric_wait_s > 0) && so.role != ServiceRole::kFabric) {
    return std::string("--shards and --fabric-wait are for --role fabric");
  }
  if (so.role == ServiceRole::kAll) {
    if (!args.nats.empty()) {
      return std::string("--nats needs --role collector, analyser or fabric");
    }
    if (args.route_by_job) return std::string("--route-by-job is for --role collector");
    if (!sources) {
      return std::string("no input: give --ipfix-udp ADDR:PORT, --sflow-udp ADDR:PORT, --watch "
                         "DIR and/or --capture IFACE (or --role analyser --nats URL)");
    }
    return std::nullopt;
  }
  if (args.nats.empty()) return fmt::format("--role {} needs --nats nats://HOST:PORT", args.role);
  if (!args.nats.starts_with("nats://")) {
    return fmt::format("--nats {}: expected nats://HOST:PORT (several: comma-separated)",
                       args.nats);
  }
  so.url = args.nats;
  so.stream = args.nats_stream;
  so.replicas = args.nats_replicas;
  so.batch_records = args.nats_batch;
  if (args.nats_fetch_batches > 0) so.fetch_batches = args.nats_fetch_batches;
  if (so.role == ServiceRole::kCollector) {
    if (!sources) {
      return std::string("--role collector needs an input: --ipfix-udp, --sflow-udp, --watch "
                         "and/or --capture");
    }
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    so.subject = args.nats_subject.empty() ? fmt::format("records.{}", host) : args.nats_subject;
    if (!so.subject.starts_with("records.") ||
        so.subject.find_first_of("*> ") != std::string::npos) {
      return fmt::format("--nats-subject {}: a collector publishes on one subject records.NAME",
                         so.subject);
    }
    so.route_by_job = args.route_by_job;
    // Unique per run: a restarted collector's batches are new messages, a retried one is not.
    so.id_prefix = fmt::format("{}-{}", so.subject,
                               std::chrono::system_clock::now().time_since_epoch().count());
  } else if (so.role == ServiceRole::kFabric) {
    if (sources) {
      return std::string("--role fabric reads the shards' fabric contributions only: drop "
                         "--ipfix-udp, --sflow-udp, --watch and --capture");
    }
    if (args.shards < 1) {
      return std::string("--role fabric needs --shards N: the shards whose contributions make "
                         "a window whole (the recogniser's --shards)");
    }
    if (args.route_by_job || !args.nats_subject.empty()) {
      return fmt::format("--role fabric reads {}: drop --route-by-job and --nats-subject",
                         prism::scaleout::kFabricSubjects);
    }
    so.fabric_shards = args.shards;
    const double wait_s = args.fabric_wait_s > 0
                              ? args.fabric_wait_s
                              : 2 * static_cast<double>(opts->buffer.window_ns) / 1e9;
    so.fabric_wait = std::chrono::milliseconds(std::llround(wait_s * 1e3));
  } else {
    if (sources) {
      return std::string("--role analyser reads the stream only: drop --ipfix-udp, --sflow-udp, "
                         "--watch and --capture (give them to a collector)");
    }
    if (args.route_by_job) return std::string("--route-by-job is for --role collector");
    so.subject = args.nats_subject.empty() ? prism::scaleout::kRecordSubjects : args.nats_subject;
    if (args.take_shards > 0) {
      if (!args.nats_subject.empty()) {
        return std::string("--take-shards reads the shards it takes (records.shard.N.>): drop "
                           "--nats-subject");
      }
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      so.take_shards = args.take_shards;
      so.lease_ttl = std::chrono::milliseconds(std::llround(args.lease_ttl_s * 1e3));
      so.lease_name = prism::scaleout::LeaseName(fmt::format("{}-{}", host, getpid()));
    }
    if (args.fabric_stage) {
      // A contribution is one shard's: an analyser holding several by lease publishes a part
      // for each (docs/scale-out.md).
      const auto shard = prism::scaleout::ShardOfRecordSubject(so.subject);
      if (args.take_shards == 0 && !shard) {
        return std::string("--fabric-stage needs the shards it answers for: --nats-subject "
                           "'records.shard.N.>' or --take-shards");
      }
      so.fabric_stage = true;
      so.fabric_shard = shard.value_or(0);
      so.fabric_piece_bytes = args.fabric_piece_kb * 1024;
    }
  }
  return std::nullopt;
}

int RunServe(const ServeArgs& args) {
  auto fail = [](const std::string& m) {
    fmt::print(stderr, "llmprism serve: {}\n", m);
    return 2;
  };
  if (!args.capture_filter.empty() && args.capture.empty()) {
    return fail("--capture-filter needs --capture IFACE");
  }
  prism::service::ServiceOptions o;
  o.udp = args.udp;
  o.sflow_udp = args.sflow_udp;
  for (const std::string& e : args.exporters) {
    auto p = prism::IpPrefix::Parse(e);
    if (!p) return fail(fmt::format("--exporter-allow {}: expected ADDR or ADDR/LEN", e));
    o.udp_allowed_sources.push_back(*p);
  }
  o.watch = args.watch;
  o.capture = args.capture;
  o.capture_filter = args.capture_filter;
  o.capture_snaplen = args.capture_snaplen;
  o.capture_buffer_bytes = args.capture_buffer_mb << 20;
  o.http = args.http;
  o.db = args.db;
  o.topology_path = args.topology;
  o.jobs_map_path = args.jobs_map;
  if (auto token = ReadToken(args); !token) {
    return fail(token.error());
  } else {
    o.token = *token;
  }
  if (auto hp = prism::service::ParseHostPort(args.http, "--http"); !hp) {
    return fail(hp.error().message);
  } else if (!IsLoopback(hp->first)) {
    WarnIfExposed(args, o.token);
  }
  if (auto error = SetLimitsAndAnalysis(args, &o)) return fail(*error);
  if (auto error = SetStreamRole(args, &o)) return fail(*error);

  // The ready file's directory is checked before anything binds: a typo there must not leave a
  // service running that its caller will never learn the ports of.
  const std::string ready_tmp = args.ready_file.empty() ? "" : args.ready_file + ".tmp";
  if (!ready_tmp.empty()) {
    std::ofstream probe(ready_tmp, std::ios::trunc);
    if (!probe) {
      return fail(fmt::format("--ready-file {}: cannot write {} ({})", args.ready_file,
                              ready_tmp, std::strerror(errno)));
    }
  }

  // Signals are taken by sigwait below: block them before any thread starts so none gets them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  auto service = prism::service::Service::Start(o);
  if (!service) return fail(service.error().message);
  const auto ports = (*service)->udp_ports();
  fmt::print(stderr, "llmprism serve: http on {}:{}, IPFIX/NetFlow v9 UDP on port(s) {}\n",
             o.http.substr(0, o.http.rfind(':')), (*service)->http_port(), fmt::join(ports, ", "));
  if (!o.capture.empty()) {
    fmt::print(stderr, "llmprism serve: capturing on {}{}\n", fmt::join(o.capture, ", "),
               o.capture_filter.empty() ? "" : " (filter '" + o.capture_filter + "')");
  }
  if (!o.alertmanager.empty()) {
    fmt::print(stderr, "llmprism serve: posting findings as alerts to {}\n",
               fmt::join(o.alertmanager, ", "));
  }
  if (!ready_tmp.empty()) {
    if (auto st = WriteReadyFile(args.ready_file, ready_tmp, **service); !st) {
      (*service)->Stop();
      return fail(st.error().message);
    }
  }
  int sig = 0;
  sigwait(&set, &sig);
  fmt::print(stderr, "llmprism serve: {}: flushing and stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  (*service)->Stop();
  fmt::print(stderr, "llmprism serve: stopped\n");
  return 0;
}

// The HTTP side: where it listens, state and side inputs, token, TLS and connection limits.
// Returns --token, whose presence RunServe checks (an empty token is refused, not ignored).
CLI::Option* AddHttpOptions(CLI::App* cmd, ServeArgs* args) {
  cmd->add_option("--http", args->http, "Serve the API, /metrics and the dashboard on ADDR:PORT")
      ->capture_default_str();
  cmd->add_option("--db", args->db, "SQLite database for durable state (jobs, steps, findings)");
  cmd->add_option("--topology", args->topology, "Topology CSV: ip,host,gpu,leaf[,kind]");
  cmd->add_option("--jobs-map", args->jobs_map,
                  "Scheduler jobs (as for analyze --jobs-map): on jobs, findings and alert "
                  "labels scheduler_job and user; read once at start");
  CLI::Option* token = cmd->add_option(
      "--token", args->token,
      "Require 'Authorization: Bearer TOKEN' on the API (visible in ps: prefer --token-file or "
      "the LLMPRISM_TOKEN environment variable; an empty token is refused)");
  cmd->add_option("--token-file", args->token_file,
                  "Read the bearer token from the first line of this file");
  cmd->add_option("--tls-cert", args->tls_cert,
                  "Serve HTTPS (TLS 1.2 or later) with this PEM certificate (chain); needs "
                  "--tls-key");
  cmd->add_option("--tls-key", args->tls_key,
                  "The PEM private key of --tls-cert (unencrypted; keep it readable by this user "
                  "only)");
  cmd->add_option("--http-threads", args->http_threads,
                  "HTTP workers, each serving one connection at a time")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--http-max-connections", args->http_max_connections,
                  "HTTP connections served or waiting at once; beyond, 503 at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--http-idle-s", args->http_idle_s,
                  "Seconds an HTTP connection may stay idle before (or between keep-alive) "
                  "requests; an idle one also gives its worker up to a waiting connection")
      ->capture_default_str()
      ->check(cli_checks::FiniteIn(0.05, 3600, false, "0.05 to 3600 seconds"));
  cmd->add_option("--http-request-s", args->http_request_s,
                  "Seconds a client has to send a whole request (slow clients are cut off)")
      ->capture_default_str()
      ->check(cli_checks::FiniteIn(0.05, 3600, false, "0.05 to 3600 seconds"));
  return token;
}

// Analysis, memory and queue sizes.
void AddAnalysisOptions(CLI::App* cmd, ServeArgs* args) {
  cmd->add_option("--k", args->k, "Diagnosis sigma multiplier")
      ->capture_default_str()
      ->check(cli_checks::kPositive);
  cmd->add_option("--threads", args->threads, "Analysis threads (0 = half the cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--memory-limit", args->memory_limit,
                  "Memory budget, e.g. 8G or 512M (default: half of MemAvailable, or of the "
                  "cgroup's limit minus its usage when lower, at start). The window buffer and "
                  "the analysis of a window are sized from it; when the record rate outgrows it, "
                  "windows get shorter (stated in the log, /api/v1/health and each window's "
                  "report) rather than records being dropped (docs/api.md, Memory)");
  AddRecordOptions(cmd, &args->record,
                   "is implausible (counted as implausible_time, not analysed); so is one ending "
                   "more than 600 s before, or 60 s after, the export time of its IPFIX message "
                   "/ NetFlow v9 packet");
  cmd->add_option("--queue-records", args->queue_records,
                  "Records that may wait between ingest and windowing; beyond, UDP batches are "
                  "dropped and counted")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{100'000'000}));
  cmd->add_option("--udp-queue-datagrams", args->udp_queue_datagrams,
                  "Datagrams each UDP collector may queue before decoding")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1'000'000}));
}

// Collectors and analysers apart, with a NATS JetStream stream between them.
void AddRoleOptions(CLI::App* cmd, ServeArgs* args) {
  cmd->add_option("--role", args->role,
                  "all: collect and analyse in this process; collector: decode the inputs and "
                  "publish record batches to --nats; analyser: analyse the records of --nats, "
                  "resuming where the --db says; fabric: judge switches and links from the "
                  "fabric contributions of --shards shard analysers (docs/scale-out.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"all", "collector", "analyser", "fabric"}));
  cmd->add_option("--nats", args->nats,
                  "NATS JetStream server(s) of --role collector/analyser, nats://HOST:PORT "
                  "(a cluster: comma-separated)");
  cmd->add_option("--nats-stream", args->nats_stream, "The stream of record batches")
      ->capture_default_str();
  cmd->add_option("--nats-subject", args->nats_subject,
                  "collector: the subject it publishes on (default records.HOSTNAME); "
                  "analyser: the subjects it reads (default records.>)");
  cmd->add_option("--nats-replicas", args->nats_replicas,
                  "collector: copies of the stream when it creates it (3 on a 3-node cluster); "
                  "analyser --take-shards: copies of the lease bucket")
      ->capture_default_str()
      ->check(CLI::Range(1, 5));
  cmd->add_option("--nats-batch", args->nats_batch, "collector: records per published batch")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1'000'000}));
  cmd->add_option("--nats-fetch-batches", args->nats_fetch_batches,
                  fmt::format("analyser: record batches asked for per fetch from the stream, "
                              "1-{} (default {})",
                              prism::service::kMaxFetchBatches,
                              prism::service::kDefaultFetchBatches))
      ->check(CLI::Range(1, prism::service::kMaxFetchBatches));
  cmd->add_flag("--route-by-job", args->route_by_job,
                "collector: publish each record on its job's shard, records.shard.N.jobs, by the "
                "map `llmprism recognise` writes (records of unknown endpoints to it), and pair "
                "summaries on pairs.NAME; an analyser of shard N reads --nats-subject "
                "'records.shard.N.>'");
  cmd->add_option("--take-shards", args->take_shards,
                  "analyser: take shards 0..N-1 (the recogniser's --shards) by lease in place of "
                  "--nats-subject: at most shards / live analysers (rounded up), each read "
                  "through its durable consumer, and a shard whose analyser stops renewing its "
                  "lease taken over after --lease-ttl (docs/scale-out.md)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--fabric-stage", args->fabric_stage,
                "analyser of one shard (--nats-subject 'records.shard.N.>'): publish each "
                "window's fabric contribution on fabric.END.N of LLMPRISM_FABRIC for a "
                "`serve --role fabric`, and leave switch and link findings to it");
  cmd->add_option("--fabric-piece-kb", args->fabric_piece_kb,
                  "analyser --fabric-stage: the largest message a contribution is published in, "
                  "KiB (larger ones go in pieces); default the NATS server's max_payload less "
                  "4 KiB")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--shards", args->shards,
                  "fabric: the shards (0..N-1) whose contributions make a window whole")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--fabric-wait", args->fabric_wait_s,
                  "fabric: seconds a window waits for a missing shard's contribution after its "
                  "first came, then is judged without it (counted, a telemetry_loss finding); "
                  "default two window lengths")
      ->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--lease-ttl", args->lease_ttl_s,
                  "analyser --take-shards: seconds a shard lease lives unrenewed before another "
                  "analyser takes the shard over; renewed every TTL/5")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 600.0));
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Monitor continuously: live flow ingest, sliding windows, HTTP API, dashboard, "
               "Prometheus /metrics, durable state (docs/api.md)");
  cmd->add_option("--ipfix-udp", args->udp,
                  "Collect IPFIX / NetFlow v9 on this UDP ADDR:PORT (repeatable; port 0 = any)");
  cmd->add_option("--sflow-udp", args->sflow_udp,
                  "Collect sFlow v5 on this UDP ADDR:PORT (repeatable; port 0 = any): sampled "
                  "packet headers become flow records carrying the sampling rate (docs/api.md)");
  cmd->add_option("--exporter-allow", args->exporters,
                  "Take IPFIX / NetFlow v9 / sFlow datagrams only from this source ADDR or "
                  "ADDR/LEN "
                  "(repeatable; default any); others are refused unread and counted "
                  "(collector_source_refused)");
  cmd->add_option("--watch", args->watch,
                  "Read flow files (IPFIX, flow CSV, pcap) dropped into this directory, then move "
                  "them to DIR/done/ (repeatable; names starting with '.' are ignored)");
  cmd->add_option("--capture", args->capture,
                  "Capture packets live on this interface (libpcap; RoCEv2 messages, TCP/UDP "
                  "flowlets, ERSPAN, IPFIX on the wire; repeatable; needs CAP_NET_RAW)");
  cmd->add_option("--capture-filter", args->capture_filter,
                  "BPF filter for --capture, e.g. 'udp port 4791'");
  AddCaptureOptions(cmd, &args->capture_flows);
  cmd->add_option("--capture-snaplen", args->capture_snaplen,
                  "Bytes captured per packet (headers only are needed)")
      ->capture_default_str()->check(CLI::Range(64, 65535));
  cmd->add_option("--capture-buffer-mb", args->capture_buffer_mb,
                  "Kernel capture buffer per interface, MB")
      ->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--window", args->window_s, "Analysis window in seconds")
      ->capture_default_str()->check(cli_checks::kPositive);
  cmd->add_option("--step", args->step_s, "Seconds between analyses (the window slides by this)")
      ->capture_default_str()->check(cli_checks::kPositive);
  cmd->add_option("--reorder", args->reorder_s,
                  "Seconds a record may arrive late (by its end time) and still join its window")
      ->capture_default_str()->check(cli_checks::kNonNegative);
  cmd->add_option("--idle-flush", args->idle_flush_s,
                  "Seconds without new records after which the open windows are analysed")
      ->capture_default_str()->check(cli_checks::kPositive);
  cmd->add_option("--analysis-nice", args->analysis_nice,
                  "Added to the analysis thread's nice value so ingest keeps the CPU it needs "
                  "(0: same priority as ingest)")
      ->capture_default_str()->check(CLI::Range(0, 19));
  cmd->add_option("--history", args->history_s,
                  "Seconds of per-GPU timelines kept in memory for /api/v1/gpus/{ip}/timeline")
      ->capture_default_str()->check(cli_checks::kPositive);
  CLI::Option* token = AddHttpOptions(cmd, args.get());
  AddAnalysisOptions(cmd, args.get());
  cmd->add_option("--alertmanager", args->alertmanager,
                  "Post findings as alerts to this Alertmanager, http[s]://HOST:PORT[/PREFIX] "
                  "(API v2; repeatable or comma-separated; docs/api.md, Alertmanager)")
      ->delimiter(',');
  AddRoleOptions(cmd, args.get());
  cmd->add_option("--ready-file", args->ready_file,
                  "Write {\"http\": PORT, \"udp\": [PORTS]} here once listening");
  cmd->callback([args, exit_code, token] {
    args->token_given = token->count() > 0;
    *exit_code = RunServe(*args);
  });
}
