#include "output/chrome_trace.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "output/report_views.h"

namespace prism::output {
namespace {

std::string Quote(const std::string& s) { return nlohmann::json(s).dump(); }

// Exact decimal microseconds of a ns offset: "-12.345".
std::string Micros(int64_t ns) {
  const bool neg = ns < 0;
  const uint64_t a = neg ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03}", neg ? "-" : "", a / 1000, a % 1000);
}

const char* Category(SegmentKind k) {
  switch (k) {
    case SegmentKind::kCompute: return "compute";
    case SegmentKind::kPpForward:
    case SegmentKind::kPpBackward: return "pp";
    case SegmentKind::kDp: return "dp";
    case SegmentKind::kBubble: return "bubble";
  }
  return "other";
}

struct Writer {
  std::ostream* out;
  int64_t origin_ns;
  bool first = true;
  std::string buf;

  void Event(const std::string& body) {
    buf += first ? "\n" : ",\n";
    first = false;
    buf += body;
    if (buf.size() > (1 << 20)) Flush();
  }
  void Flush() {
    out->write(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.clear();
  }
  std::string Ts(int64_t ns) const { return Micros(ns - origin_ns); }
};

// The thread (row) of one GPU in a job's process.
struct Track {
  int tid = 0;
  const ReportTimeline* timeline = nullptr;
};

bool InSomeStep(const ReportTimeline& t, int64_t ns) {
  auto it = std::upper_bound(t.steps.begin(), t.steps.end(), ns,
                             [](int64_t v, const ReportStep& s) { return v < s.start_ns; });
  if (it == t.steps.begin()) return false;
  --it;
  return ns >= it->start_ns && ns <= it->end_ns;
}

// Time zero of the trace: the earliest of the report's start, any step and any finding.
int64_t TraceOrigin(const Report& report) {
  int64_t origin_ns = report.start_ns;
  for (const ReportTimeline& t : report.timelines) {
    if (!t.steps.empty()) origin_ns = std::min(origin_ns, t.steps.front().start_ns);
  }
  for (const ReportFinding& f : report.findings) origin_ns = std::min(origin_ns, f.start_ns);
  return origin_ns;
}

// A job's process: its name, sort index and sampling label, and one thread per selected GPU.
// Returns the GPUs' tracks.
std::map<IpAddr, Track> WriteJobProcess(Writer& w, const Report& report, const ReportJob& job,
                                        int pid, const GpuSelection& sel) {
  const ReportLayout& l = job.layout;
  std::string pname = fmt::format("{} ({} GPUs, DP{}xPP{}xTP{})", job.id, job.gpus.size(), l.dp,
                                  l.pp, l.tp);
  w.Event(fmt::format(R"({{"ph":"M","pid":{},"tid":0,"name":"process_name","args":{{"name":{}}}}})",
                      pid, Quote(pname)));
  w.Event(fmt::format(
      R"({{"ph":"M","pid":{},"tid":0,"name":"process_sort_index","args":{{"sort_index":{}}}}})",
      pid, pid));
  std::string sampling =
      sel.sampled ? fmt::format("{} of {} GPUs: one pipeline replica plus the GPUs named in "
                                "findings (analyze --trace-all writes every GPU)",
                                sel.gpus.size(), sel.total)
                  : fmt::format("all {} GPUs", sel.total);
  w.Event(fmt::format(
      R"({{"ph":"M","pid":{},"tid":0,"name":"process_labels","args":{{"labels":{}}}}})", pid,
      Quote(sampling)));

  std::map<IpAddr, Track> tracks;
  std::map<IpAddr, const ReportTimeline*> by_gpu;
  for (const ReportTimeline& t : report.timelines) {
    if (t.job == job.id) by_gpu[t.gpu] = &t;
  }
  int tid = 1;
  for (const SelectedGpu& g : sel.gpus) {
    tracks[g.gpu] = {tid, by_gpu.at(g.gpu)};
    auto host = job.host_of.find(g.gpu);
    std::string tname = fmt::format("{} stage{} {}", g.gpu.ToString(), g.stage,
                                    host != job.host_of.end() ? host->second : std::string());
    w.Event(fmt::format(
        R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})", pid, tid,
        Quote(tname)));
    w.Event(fmt::format(
        R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
        pid, tid, tid));
    ++tid;
  }
  return tracks;
}

// One GPU's steps as slices, their segments inside them, and an arrow (flow events, ids from
// `flow_id`) for each outgoing pipeline transfer whose peer is shown too.
void WriteTrackEvents(Writer& w, int pid, const Track& track,
                      const std::map<IpAddr, Track>& tracks, uint64_t* flow_id) {
  const ReportTimeline& t = *track.timeline;
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const ReportStep& s = t.steps[k];
    if (s.end_ns < s.start_ns) continue;
    w.Event(fmt::format(
        R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":"step {}","cat":"step","args":{{"compute_ms":{:.3f},"bubble_ms":{:.3f}}}}})",
        pid, track.tid, w.Ts(s.start_ns), Micros(s.end_ns - s.start_ns), k,
        static_cast<double>(s.compute_ns) / 1e6, static_cast<double>(s.bubble_ns) / 1e6));
    for (const StepSegment& seg : StepSegments(s)) {
      w.Event(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":"{}","cat":"{}"}})",
                          pid, track.tid, w.Ts(seg.start_ns), Micros(seg.end_ns - seg.start_ns),
                          SegmentKindName(seg.kind), Category(seg.kind)));
    }
    for (const ReportPpEvent& e : s.pp_events) {
      if (!e.outgoing) continue;
      auto peer = tracks.find(e.peer);
      if (peer == tracks.end()) continue;
      // Both ends must fall inside a slice for the viewers to bind the arrow.
      if (e.start_ns < s.start_ns || e.start_ns > s.end_ns) continue;
      if (!InSomeStep(*peer->second.timeline, e.end_ns)) continue;
      const char* name = e.forward ? "PP forward" : "PP backward";
      ++*flow_id;
      w.Event(fmt::format(
          R"({{"ph":"s","pid":{},"tid":{},"ts":{},"id":{},"name":"{}","cat":"pp"}})", pid,
          track.tid, w.Ts(e.start_ns), *flow_id, name));
      w.Event(fmt::format(
          R"({{"ph":"f","bp":"e","pid":{},"tid":{},"ts":{},"id":{},"name":"{}","cat":"pp"}})",
          pid, peer->second.tid, w.Ts(e.end_ns), *flow_id, name));
    }
  }
}

// A finding as an instant event: on each of its GPUs' threads that is shown, else on its job's
// process, else (no job in the trace) on the cluster.
void WriteFindingEvent(Writer& w, const ReportFinding& f,
                       const std::map<std::string, int>& pid_of_job,
                       const std::map<std::string, std::map<IpAddr, Track>>& tracks_of_job) {
  std::string args = fmt::format(
      R"({{"severity":"{}","cause":"{}","metric":{},"value":{},"baseline":{},"end_us":{},"gpus":{},"switches":{},"summary":{}}})",
      diagnosis::SeverityName(f.severity), diagnosis::CauseName(f.cause), Quote(f.metric),
      f.value, f.baseline, w.Ts(f.end_ns), f.gpus.size(), Quote(fmt::format("{}", fmt::join(f.switches, ","))),
      Quote(f.summary));
  auto pid = pid_of_job.find(f.job);
  if (pid == pid_of_job.end()) {
    w.Event(fmt::format(R"({{"ph":"i","s":"g","pid":0,"tid":0,"ts":{},"name":{},"cat":"finding","args":{}}})",
                        w.Ts(f.start_ns), Quote(diagnosis::FindingKindName(f.kind)), args));
    return;
  }
  const std::map<IpAddr, Track>& tracks = tracks_of_job.at(f.job);
  bool on_thread = false;
  for (const IpAddr& g : f.gpus) {
    auto track = tracks.find(g);
    if (track == tracks.end()) continue;
    on_thread = true;
    w.Event(fmt::format(
        R"({{"ph":"i","s":"t","pid":{},"tid":{},"ts":{},"name":{},"cat":"finding","args":{}}})",
        pid->second, track->second.tid, w.Ts(f.start_ns),
        Quote(diagnosis::FindingKindName(f.kind)), args));
  }
  if (!on_thread) {
    w.Event(fmt::format(
        R"({{"ph":"i","s":"p","pid":{},"tid":0,"ts":{},"name":{},"cat":"finding","args":{}}})",
        pid->second, w.Ts(f.start_ns), Quote(diagnosis::FindingKindName(f.kind)), args));
  }
}

}  // namespace

Status WriteChromeTrace(const Report& report, std::ostream* out, const ChromeTraceOptions& options) {
  const int64_t origin_ns = TraceOrigin(report);
  const size_t max_all = options.all_gpus ? static_cast<size_t>(-1) : options.max_gpus_all;
  std::vector<GpuSelection> selections;
  bool any_sampled = false;
  for (const ReportJob& job : report.jobs) {
    selections.push_back(SelectTimelineGpus(report, job, max_all));
    any_sampled |= selections.back().sampled;
  }
  std::string head = fmt::format(
      R"({{"displayTimeUnit":"ms","otherData":{{"generator":"llmprism analyze --trace","origin_unix_ns":"{}","sampled":{}}},"traceEvents":[)",
      origin_ns, any_sampled ? "true" : "false");
  out->write(head.data(), static_cast<std::streamsize>(head.size()));

  Writer w{out, origin_ns, true, {}};
  w.Event(R"({"ph":"M","pid":0,"tid":0,"name":"process_name","args":{"name":"cluster"}})");
  w.Event(R"({"ph":"M","pid":0,"tid":0,"name":"process_sort_index","args":{"sort_index":0}})");

  // One process per job (pid = its index + 1, 0 is the cluster), one thread per shown GPU.
  std::map<std::string, int> pid_of_job;
  std::map<std::string, std::map<IpAddr, Track>> tracks_of_job;
  uint64_t flow_id = 0;
  for (size_t j = 0; j < report.jobs.size(); ++j) {
    const ReportJob& job = report.jobs[j];
    const int pid = static_cast<int>(j) + 1;
    pid_of_job[job.id] = pid;
    const std::map<IpAddr, Track>& tracks = tracks_of_job[job.id] =
        WriteJobProcess(w, report, job, pid, selections[j]);
    for (const auto& [gpu, track] : tracks) WriteTrackEvents(w, pid, track, tracks, &flow_id);
  }
  for (const ReportFinding& f : report.findings) {
    WriteFindingEvent(w, f, pid_of_job, tracks_of_job);
  }

  w.Flush();
  *out << "\n]}\n";
  out->flush();
  if (!*out) return MakeError(ErrorCode::kDataLoss, "cannot write the trace");
  return {};
}

}  // namespace prism::output
