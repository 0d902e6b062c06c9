// File: apps/llmprism/analyze_cmd.cc
// `llmprism analyze INPUT... [--topology FILE] [--window SECONDS] [--report FILE.json] [--k K]
//  [--timelines] [--html FILE.html] [--trace FILE.json [--trace-all]] [--max-record-s 3600]`:
// reads flow CSV, IPFIX, pcap and pcapng files (the format of each is detected from its first
// bytes, zstd or not), skips records of implausible duration (pipeline/record_duration.h),
// cuts the records into windows, runs analysis and diagnosis on each window,
// merges the windows into one report (output/report.h), writes it as JSON / HTML page / Chrome
// trace when asked and prints the summary (coloured only when stdout is a terminal). When stderr is a
// terminal, progress (records and bytes read, rate, ETA; windows analysed) goes there.
// Exit codes (docs/design.md, Exit codes): 0 ok; 1 analysis ran but input records were skipped as
// bad; 2 unusable input or arguments, with a message on stderr naming the file.
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "capture_options.h"
#include "cli_checks.h"
#include "counters_cmd.h"
#include "heap_huge_pages.h"
#include "output_file.h"
#include "record_options.h"

#include "analysis/analyze.h"
#include "core/name_table.h"
#include "core/record_batch.h"
#include "core/stats.h"
#include "core/status.h"
#include "core/topology.h"
#include "diagnosis/diagnose.h"
#include "flow/flow_table.h"
#include "io/input_kind.h"
#include "io/jobs_map.h"
#include "io/topology_csv.h"
#include "output/chrome_trace.h"
#include "output/html_report.h"
#include "output/scheduler_jobs.h"
#include "output/report.h"
#include "output/report_json.h"
#include "output/text_summary.h"
#include "pipeline/analyze_window.h"
#include "pipeline/input_registry.h"
#include "pipeline/ipfix_read_on_threads.h"
#include "pipeline/record_duration.h"
#include "scaleout/record_stream.h"

namespace {

using prism::ErrorCode;
using prism::MakeError;
using prism::Status;
using prism::StatusOr;
using output_file::WriteOutputFile;

struct AnalyzeArgs {
  std::vector<std::string> inputs;
  std::string topology;
  std::string jobs_map;  // --jobs-map: scheduler jobs (io/jobs_map.h)
  double window_s = 60;
  std::string report;
  double k = 3;
  int threads = 0;  // 0 = std::thread::hardware_concurrency()
  bool pp_events = false;
  bool timelines = false;  // every GPU's steps in the report JSON (else one summary line per GPU)
  std::string html;
  std::string trace;
  bool trace_all = false;
  bool timings = false;  // per-stage CPU / wall time and peak RSS on stderr
  CountersCliArgs counters;  // counters mode (counters_cmd.h)
  CaptureCliArgs capture;    // captures: flowlet gap, RoCE idle timeout
  RecordCliArgs record;      // --max-record-s
};

// Bytes this process has read through read(2) so far (/proc/self/io "rchar"); -1 when unknown.
// The readers stream each file sequentially, so its growth is the progress through the file
// (compressed bytes for .zst, which is what the file size counts too).
int64_t ProcessBytesRead() {
  std::FILE* f = std::fopen("/proc/self/io", "r");
  if (f == nullptr) return -1;
  char line[128];
  int64_t v = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    long long x = 0;
    if (std::sscanf(line, "rchar: %lld", &x) == 1) {
      v = x;
      break;
    }
  }
  std::fclose(f);
  return v;
}

std::string Megabytes(int64_t bytes) {
  return fmt::format("{:.0f} MB", static_cast<double>(bytes) / 1e6);
}

// Forwards records to `inner` and, when enabled (stderr is a terminal), redraws one progress line
// on stderr at most four times a second: records, bytes of the file, rate and ETA.
class ProgressSink : public prism::FlowSink, public prism::BatchSink {
 public:
  ProgressSink(prism::FlowSink* inner, bool enabled, std::string path)
      : inner_(inner), inner_batches_(prism::BatchSideOf(inner)), enabled_(enabled),
        path_(std::move(path)) {
    if (!enabled_) return;
    start_ = last_ = std::chrono::steady_clock::now();
    bytes0_ = ProcessBytesRead();
    if (std::FILE* f = std::fopen(path_.c_str(), "rb")) {
      if (std::fseek(f, 0, SEEK_END) == 0) size_ = std::ftell(f);
      std::fclose(f);
    }
  }
  void OnRecord(const prism::FlowRecord& r) override {
    inner_->OnRecord(r);
    if (enabled_ && (++records_ & 0xffff) == 0) Tick(false);
  }
  bool TakesBatches() const override { return inner_batches_ != nullptr; }
  void OnBatch(prism::RecordBatch* batch) override {
    const uint64_t n = batch->size;  // before the inner sinks drop any
    inner_batches_->OnBatch(batch);
    if (enabled_ && ((records_ + n) >> 16) != (records_ >> 16)) Tick(false);
    records_ += n;
  }
  void Done() {
    if (enabled_ && records_ > 0) Tick(true);
  }
  // The file's records when some reached the table past this sink (the later runs of a file read
  // on threads): the last line counts them all.
  void SetFileRecords(uint64_t records) { records_ = std::max(records_, records); }

 private:
  void Tick(bool done) {
    auto now = std::chrono::steady_clock::now();
    if (!done && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? static_cast<double>(records_) / secs : 0;
    std::string bytes, eta;
    const int64_t b = bytes0_ >= 0 ? ProcessBytesRead() - bytes0_ : -1;
    if (b >= 0 && size_ > 0) {
      const int64_t shown = std::min(b, size_);
      bytes = fmt::format(", {} of {} ({:.0f}%)", Megabytes(shown), Megabytes(size_),
                          100.0 * static_cast<double>(shown) / static_cast<double>(size_));
      if (!done && shown > 0 && secs > 0.5) {
        const double left = secs * static_cast<double>(size_ - shown) / static_cast<double>(shown);
        eta = fmt::format(", ETA {:.0f} s", left);
      }
    }
    fmt::print(stderr, "\r\x1b[Kreading {}: {} records{}, {:.1f} M records/s{}{}", path_, records_,
               bytes, rate / 1e6, eta, done ? fmt::format(", {:.1f} s\n", secs) : "");
  }

  prism::FlowSink* inner_;
  prism::BatchSink* inner_batches_;  // null: `inner` takes records one by one
  bool enabled_;
  std::string path_;
  uint64_t records_ = 0;
  int64_t bytes0_ = -1, size_ = -1;
  std::chrono::steady_clock::time_point start_, last_;
};

// Rows [lo, hi) of the sorted table whose starts fall in [start_ns, end_ns).
struct WindowCut {
  int64_t start_ns = 0, end_ns = 0;
  size_t lo = 0, hi = 0;
};

// Windows of `window_ns` aligned at the earliest start; empty windows are skipped. A last window
// holding less than a tenth of a window of data joins the window before it (when adjacent): the
// few seconds by which a capture overruns a whole number of windows are too little to analyse
// alone, and a sliver of a job would only add a spurious partial job to the report.
std::vector<WindowCut> CutWindows(const prism::flow::FlowTable& table, int64_t window_ns) {
  std::vector<WindowCut> cuts;
  auto starts = table.start_ns();
  const size_t n = starts.size();
  if (n == 0) return cuts;
  const int64_t t0 = starts[0];
  size_t lo = 0;
  while (lo < n) {
    int64_t k = (starts[lo] - t0) / window_ns;
    WindowCut cut;
    cut.start_ns = t0 + k * window_ns;
    // Saturated: a window starting within a window of INT64_MAX would wrap to a negative end,
    // take no record and never move on. Its end is then INT64_MAX, after every record.
    cut.end_ns = cut.start_ns > std::numeric_limits<int64_t>::max() - window_ns
                     ? std::numeric_limits<int64_t>::max()
                     : cut.start_ns + window_ns;
    cut.lo = lo;
    cut.hi = cut.end_ns == std::numeric_limits<int64_t>::max()
                 ? n
                 : static_cast<size_t>(
                       std::lower_bound(starts.begin() + static_cast<ptrdiff_t>(lo), starts.end(),
                                        cut.end_ns) -
                       starts.begin());
    cuts.push_back(cut);
    lo = cut.hi;
  }
  if (cuts.size() >= 2) {
    WindowCut& last = cuts.back();
    WindowCut& prev = cuts[cuts.size() - 2];
    if (prev.end_ns == last.start_ns && starts[n - 1] - last.start_ns < window_ns / 10) {
      prev.end_ns = starts[n - 1] == std::numeric_limits<int64_t>::max()
                        ? starts[n - 1]
                        : starts[n - 1] + 1;
      prev.hi = last.hi;
      cuts.pop_back();
    }
  }
  return cuts;
}

std::string Rel(int64_t ns, int64_t origin_ns) {
  return fmt::format("+{:.1f}s", static_cast<double>(ns - origin_ns) / 1e9);
}

// Capacity to reserve for the records of `path`: its size over the smallest record of its format
// (an IPFIX record of the writer's IPv4 template with an empty point name is 52 bytes, a CSV row
// at least 30). Reserved, not touched: pages beyond what the records use cost no memory, and the
// columns need not be copied as they grow.
size_t EstimateRecords(const std::string& path, prism::io::InputKind kind) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return 0;
  long size = std::fseek(f, 0, SEEK_END) == 0 ? std::ftell(f) : 0;
  std::fclose(f);
  if (size <= 0) return 0;
  switch (kind) {
    case prism::io::InputKind::kIpfix: return static_cast<size_t>(size) / 52;
    case prism::io::InputKind::kFlowCsv: return static_cast<size_t>(size) / 30;
    default: return 0;
  }
}

// The --timings table on stderr: per stage (summed over windows) records, CPU and wall seconds,
// records per CPU second and the process's peak RSS so far. One line per stage, columns
// separated by spaces, read by bench/e2e.py.
void PrintTimings(const std::vector<prism::analysis::StageTime>& laps, uint64_t records) {
  std::vector<prism::analysis::StageTime> stages;
  for (const auto& l : laps) {
    auto it = std::find_if(stages.begin(), stages.end(), [&](const auto& s) { return s.name == l.name; });
    if (it == stages.end()) {
      stages.push_back(l);
      continue;
    }
    it->items += l.items;
    it->cpu_s += l.cpu_s;
    it->wall_s += l.wall_s;
    it->peak_rss_bytes = std::max(it->peak_rss_bytes, l.peak_rss_bytes);
    it->rss_bytes = l.rss_bytes;
  }
  prism::analysis::StageTime total{"total", records};
  for (const auto& s : stages) {
    total.cpu_s += s.cpu_s;
    total.wall_s += s.wall_s;
    total.peak_rss_bytes = std::max(total.peak_rss_bytes, s.peak_rss_bytes);
  }
  stages.push_back(total);
  fmt::print(stderr, "memory: heap in {}\n", prism::app::HeapPagesNote());
  fmt::print(stderr, "timings: {:<18} {:>12} {:>9} {:>9} {:>12} {:>12} {:>9} {:>8}\n", "stage", "items",
             "cpu_s", "wall_s", "items/cpu_s", "peak_rss_mb", "B/record", "rss_mb");
  for (const auto& s : stages) {
    fmt::print(stderr, "timings: {:<18} {:>12} {:>9.3f} {:>9.3f} {:>12.0f} {:>12.1f} {:>9.1f} {:>8.1f}\n", s.name,
               s.items, s.cpu_s, s.wall_s, s.cpu_s > 0 ? double(s.items) / s.cpu_s : 0.0,
               double(s.peak_rss_bytes) / 1e6,
               records > 0 ? double(s.peak_rss_bytes) / double(records) : 0.0,
               double(s.rss_bytes) / 1e6);
  }
}

// With --threads, the analysis's stages free on one thread what the next allocates on another
// (transfers built on the main thread, freed by the timeline workers; the workers' per-GPU lists
// freed while other workers allocate timelines). glibc gives each thread its own arena, and
// memory freed in one arena is not reused by another: at paper scale --threads 2 peaked at
// 531-541 MB against 458 MB for one thread. One arena for the process lets every stage reuse what
// the last one freed: 458-459 MB. The price is the arena lock: classification's CPU went up
// ~0.08 s (2% of the run) at two threads. Set before any thread starts.
void ShareOneMallocArena(int threads) {
#if defined(__GLIBC__)
  if (threads > 1) mallopt(M_ARENA_MAX, 1);
#endif
}

// Counters mode when --prometheus or --sflow-counters is given or the first input is a port
// counters CSV.
bool WantsCounters(const AnalyzeArgs& args) {
  if (!args.counters.prometheus.empty() || args.counters.sflow) return true;
  if (args.inputs.empty()) return false;
  auto kind = prism::io::SniffInputKind(args.inputs[0]);
  return kind && *kind == prism::io::InputKind::kPortCountersCsv;
}

// What analysis reads besides the flow records, when given: the topology and scheduler jobs.
struct SideInputs {
  std::optional<prism::Topology> topology;
  std::optional<prism::io::JobsMap> jobs_map;
};

StatusOr<SideInputs> ReadSideInputs(const AnalyzeArgs& args, prism::Stats* stats) {
  SideInputs side;
  if (!args.topology.empty()) {
    auto topo = prism::io::ReadTopologyCsv(args.topology, stats);
    if (!topo) return std::unexpected(topo.error());
    side.topology = std::move(*topo);
  }
  if (!args.jobs_map.empty()) {
    auto m = prism::io::ReadJobsMap(args.jobs_map, stats);
    if (!m) return std::unexpected(m.error());
    side.jobs_map = std::move(*m);
  }
  return side;
}

// The records a JetStream stream holds (`llmprism publish`, or collectors), read to its end.
StatusOr<uint64_t> ReadNatsInput(const std::string& url, prism::FlowSink* sink,
                                 prism::PointTable* points, prism::Stats* stats) {
  auto address = prism::scaleout::ParseStreamAddress(url);
  if (!address) return std::unexpected(address.error());
  return prism::scaleout::ReadRecordStream(*address, std::chrono::seconds(2), sink, points,
                                           stats);
}

// Every input's records into `all` (each file's format sniffed; records of implausible duration
// counted and skipped), each file named as a source of the report. With `threads` > 1 an IPFIX
// file is decoded in runs side by side (pipeline/ipfix_read_on_threads.h: the same table).
Status ReadFlowInputs(const AnalyzeArgs& args, int threads, bool progress,
                      prism::flow::FlowTable* all, prism::PointTable* points,
                      prism::output::ReportBuilder* builder, prism::Stats* stats) {
  size_t expected_records = 0;
  for (const std::string& path : args.inputs) {
    if (auto kind = prism::io::SniffInputKind(path)) expected_records += EstimateRecords(path, *kind);
  }
  all->Reserve(expected_records);
  const prism::pipeline::ReadOptions read_options = ToReadOptions(args.capture);
  const prism::pipeline::InputRegistry& readers = prism::pipeline::InputRegistry::Default();
  // Records ending before they start or lasting implausibly long are counted and skipped here,
  // before the window cut: one such record would otherwise stretch its window's time axis.
  prism::pipeline::DurationFilter plausible(all, args.record.max_record_ns(), stats);
  for (const std::string& path : args.inputs) {
    ProgressSink sink(&plausible, progress, path);
    if (path.starts_with("nats://")) {  // a JetStream stream of record batches (scale-out.md)
      auto read = ReadNatsInput(path, &sink, points, stats);
      sink.Done();
      if (!read) return std::unexpected(read.error());
      builder->AddSource(path, "nats", *read);
      continue;
    }
    if (auto kind = prism::io::SniffInputKind(path);
        threads > 1 && kind && *kind == prism::io::InputKind::kIpfix) {
      auto read = prism::pipeline::ReadIpfixFileOnThreads(
          path, threads, &sink, all, args.record.max_record_ns(), points, stats);
      if (!read) return std::unexpected(read.error());
      if (*read) {
        sink.SetFileRecords(**read);
        sink.Done();
        builder->AddSource(path, prism::io::InputKindName(*kind), **read);
        continue;
      }
    }
    auto read = readers.Read(path, read_options, &sink, points, stats);
    sink.Done();
    if (!read) return std::unexpected(read.error());
    builder->AddSource(path, prism::io::InputKindName(read->kind), read->records);
  }
  all->ReleaseUnusedCapacity();
  if (all->empty()) {
    return MakeError(ErrorCode::kDataLoss, "no usable flow record in {}",
                     fmt::join(args.inputs, ", "));
  }
  return prism::OkStatus();
}

// What every window's analysis shares: options, inputs besides the records, the baselines carried
// from window to window, and where results and timings go.
struct WindowRun {
  prism::pipeline::WindowOptions options;
  const prism::Topology* topology = nullptr;
  const prism::PointTable* points = nullptr;
  prism::diagnosis::BaselineStore baselines;
  prism::Stats* stats = nullptr;
  prism::output::ReportBuilder* builder = nullptr;
  prism::analysis::StageTimer* timer = nullptr;
  std::vector<prism::analysis::StageTime>* laps = nullptr;  // null without --timings
  bool progress = false;
};

// The sorted records cut into windows and each analysed into the report builder. Consumes `all`.
void AnalyzeWindows(prism::flow::FlowTable&& all, int64_t window_ns, WindowRun& run) {
  const int64_t origin_ns = all.start_ns()[0];
  const std::vector<WindowCut> cuts = CutWindows(all, window_ns);
  const auto analysis_start = std::chrono::steady_clock::now();
  for (size_t wi = 0; wi < cuts.size(); ++wi) {
    const WindowCut& cut = cuts[wi];
    if (run.progress) {
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - analysis_start).count();
      std::string eta = wi > 0 ? fmt::format(", ETA {:.0f} s", secs / static_cast<double>(wi) *
                                                                   static_cast<double>(cuts.size() - wi))
                               : "";
      fmt::print(stderr, "\r\x1b[Kanalysing window {}/{} ({} records){}", wi + 1, cuts.size(),
                 cut.hi - cut.lo, eta);
    }
    // Windows before the last are copies; the last one is cut from `all` in place (no second
    // copy of the columns: a single window costs its records once).
    prism::flow::FlowTable window;
    if (wi + 1 < cuts.size()) {
      window = all.CopyRows(cut.lo, cut.hi);
    } else {
      all.KeepRows(cut.lo, cut.hi, run.options.analysis.threads);
      window = std::move(all);
    }
    prism::pipeline::WindowInputs in;
    in.start_ns = cut.start_ns;
    in.end_ns = cut.end_ns;
    in.topology = run.topology;
    in.points = run.points;
    const prism::pipeline::WindowSummary summary = prism::pipeline::AnalyzeWindow(
        std::move(window), in, run.options, &run.baselines, run.stats, run.builder, run.timer,
        run.laps);
    if (summary.jobs == 0) {
      fmt::print(stderr, "llmprism analyze: warning: window {} to {} ({} records) has no job\n",
                 Rel(cut.start_ns, origin_ns), Rel(cut.end_ns, origin_ns), summary.records);
    }
  }
  if (run.progress) fmt::print(stderr, "\r\x1b[K");
}

// The report JSON, HTML page and Chrome trace, each when asked for.
Status WriteOutputs(const AnalyzeArgs& args, const prism::output::Report& report, int threads,
                    bool progress) {
  if (!args.report.empty()) {
    prism::output::ReportJsonOptions json_options;
    json_options.pp_events = args.pp_events;
    json_options.threads = threads;
    // Writing every GPU's steps was most of the report's cost at 10,000 GPUs; they go in when
    // asked for, when PP events (which live in the steps) are, and beside the HTML page and the
    // trace, which show the same timelines and are checked against the report's.
    json_options.timelines =
        args.timelines || args.pp_events || !args.html.empty() || !args.trace.empty();
    if (auto st = WriteOutputFile(args.report, "report", [&](std::ostream* out) {
          return prism::output::WriteReportJson(report, out, json_options);
        }); !st) {
      return st;
    }
  }
  if (!args.html.empty()) {
    if (progress) fmt::print(stderr, "writing {}\n", args.html);
    if (auto st = WriteOutputFile(args.html, "HTML report", [&](std::ostream* out) {
          return prism::output::WriteHtmlReport(report, out);
        }); !st) {
      return st;
    }
  }
  if (!args.trace.empty()) {
    if (progress) fmt::print(stderr, "writing {}\n", args.trace);
    prism::output::ChromeTraceOptions trace_options;
    trace_options.all_gpus = args.trace_all;
    return WriteOutputFile(args.trace, "trace", [&](std::ostream* out) {
      return prism::output::WriteChromeTrace(report, out, trace_options);
    });
  }
  return prism::OkStatus();
}

int RunAnalyze(const AnalyzeArgs& args) {
  auto fail = [](const prism::Error& e) {
    fmt::print(stderr, "llmprism analyze: {}\n", e.message);
    return 2;
  };
  if (WantsCounters(args)) {
    CountersCliArgs c = args.counters;
    c.inputs = args.inputs;
    c.topology = args.topology;
    c.report = args.report;
    c.html = args.html;
    c.k = args.k;
    return RunCountersAnalyze(c);
  }
  if (args.inputs.empty()) {
    return fail({ErrorCode::kInvalidArgument, "no input given (flow files, counter files or --prometheus)"});
  }
  const int threads =
      args.threads > 0 ? args.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ShareOneMallocArena(threads);
  const int64_t window_ns = std::llround(args.window_s * 1e9);
  if (window_ns < 1'000'000) {
    return fail({ErrorCode::kInvalidArgument, "--window must be at least 0.001 seconds"});
  }
  prism::Stats stats;
  auto side = ReadSideInputs(args, &stats);
  if (!side) return fail(side.error());

  std::vector<prism::analysis::StageTime> laps;
  prism::analysis::StageTimer timer(args.timings ? &laps : nullptr);
  prism::PointTable points;
  prism::flow::FlowTable all;
  prism::output::ReportBuilder builder(args.window_s);
  const bool progress = isatty(STDERR_FILENO) == 1;
  if (auto st = ReadFlowInputs(args, threads, progress, &all, &points, &builder, &stats); !st) {
    return fail(st.error());
  }
  const uint64_t total_records = all.size();
  timer.Lap("read", total_records);
  all.SortByStart(threads);
  prism::pipeline::KeepBlocksForTheAnalysis(total_records);
  timer.Lap("sort", total_records);

  WindowRun run;
  run.options.analysis.threads = threads;
  run.options.analysis.timelines.keep_pp_events =
      args.pp_events || !args.html.empty() || !args.trace.empty();
  run.options.diagnosis.k = args.k;
  run.topology = side->topology ? &*side->topology : nullptr;
  run.points = &points;
  run.stats = &stats;
  run.builder = &builder;
  run.timer = &timer;
  run.laps = args.timings ? &laps : nullptr;
  run.progress = progress;
  AnalyzeWindows(std::move(all), window_ns, run);
  builder.SetInputStats(stats);
  prism::output::Report report = builder.Build();
  // The builder's maps are not needed any more: with threads they are freed on a thread of their
  // own while the outputs are written (5 ms at 10,000 GPUs, otherwise spent at exit).
  std::jthread free_builder;
  if (threads > 1) {
    free_builder =
        std::jthread([b = std::move(builder)]() mutable { b = prism::output::ReportBuilder(); });
  }
  timer.Lap("report_build", total_records);
  if (const auto& jobs_map = side->jobs_map) {
    const prism::output::SchedulerMatch m = prism::output::ApplySchedulerJobs(*jobs_map, &report);
    fmt::print(stderr,
               "llmprism analyze: --jobs-map {}: {} scheduler jobs from {} lines ({} bad lines "
               "skipped, {} pending jobs); {} of {} recognised jobs named, {} scheduler_mismatch "
               "findings\n",
               args.jobs_map, jobs_map->jobs.size(), jobs_map->lines, jobs_map->bad_lines,
               jobs_map->pending_lines, m.jobs_named, report.jobs.size(), m.mismatches);
  }
  // The terminal summary reads the report as the files do: with threads it is made beside them
  // (6 ms at 10,000 GPUs), and still printed after them.
  const bool color = isatty(STDOUT_FILENO) == 1;
  std::future<std::string> summary =
      std::async(threads > 1 ? std::launch::async : std::launch::deferred,
                 [&report, color] { return prism::output::FormatSummary(report, color); });
  if (auto st = WriteOutputs(args, report, threads, progress); !st) return fail(st.error());
  fmt::print("{}", summary.get());
  std::fflush(stdout);
  timer.Lap("write_outputs", total_records);
  if (args.timings) PrintTimings(laps, total_records);

  if (uint64_t skipped = stats.SkippedTotal(); skipped > 0) {
    fmt::print(stderr, "llmprism analyze: {} input records or rows were skipped as bad\n", skipped);
    return 1;
  }
  return 0;
}

}  // namespace

void RegisterAnalyzeCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<AnalyzeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Recognise jobs, layouts and step timelines, and diagnose them, from flow records");
  cmd->add_option("inputs", args->inputs,
                  "Flow CSV, IPFIX, pcap or pcapng files, or port counters CSVs (format "
                  "detected from the content; .zst is fine), or a JetStream stream of record "
                  "batches: nats://HOST:PORT[/STREAM[/SUBJECT]] (docs/scale-out.md)");
  AddCaptureOptions(cmd, &args->capture);
  AddRecordOptions(cmd, &args->record, "is counted as record_bad_duration and skipped");
  cmd->add_option("--jobs-map", args->jobs_map,
                  "Scheduler jobs: CSV host_or_ip,job_id,user,name and/or squeue -o "
                  "\"%i|%u|%j|%N\" lines; names jobs and findings, flags scheduler_mismatch "
                  "(docs/design.md, Scheduler jobs)");
  cmd->add_option("--topology", args->topology,
                  "Topology CSV: ip,host,gpu,leaf[,kind]; for port counters switch,port,server[,nic_ip,nic]");
  AddCountersOptions(cmd, &args->counters);
  cmd->add_option("--window", args->window_s,
                  "Analysis window in seconds, aligned at the earliest record (a last window "
                  "shorter than a tenth of this joins the one before)")
      ->capture_default_str()
      ->check(cli_checks::kPositive);
  cmd->add_option("--report", args->report, "Write the report JSON here (docs/report-schema.md)");
  cmd->add_option("--k", args->k, "Diagnosis sigma multiplier")
      ->capture_default_str()
      ->check(cli_checks::kPositive);
  cmd->add_option("--threads", args->threads,
                  "Threads for independent pairs, jobs and columns (0 = every core; the result "
                  "is the same for any count)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  cmd->add_flag("--timings", args->timings,
                "Print per-stage records, CPU and wall seconds, rate and peak RSS to stderr "
                "(docs/performance.md)");
  cmd->add_flag("--timelines", args->timelines,
                "Write every GPU's step timeline into the report (`llmprism eval` needs them; "
                "implied by --pp-events, --html and --trace); otherwise one summary line per GPU");
  cmd->add_flag("--pp-events", args->pp_events,
                "Include per-step pipeline events in the report's timelines (much larger)");
  cmd->add_option("--html", args->html,
                  "Write a self-contained HTML page (layout, step times, per-GPU timelines, findings)");
  cmd->add_option("--trace", args->trace,
                  "Write the per-GPU timelines as Chrome Trace Event JSON (ui.perfetto.dev, "
                  "chrome://tracing); jobs over 64 GPUs are sampled unless --trace-all");
  cmd->add_flag("--trace-all", args->trace_all,
                "With --trace: every GPU of every job (about 100 MB per 1,000 GPU-minutes)");
  cmd->callback([args, exit_code] { *exit_code = RunAnalyze(*args); });
}
