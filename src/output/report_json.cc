#include "output/report_json.h"

#include <algorithm>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "output/json_text.h"

namespace prism::output {
namespace {

using nlohmann::json;

json IpList(const std::vector<IpAddr>& ips) {
  json out = json::array();
  for (const IpAddr& ip : ips) out.push_back(ip.ToString());
  return out;
}

// An empty job id means "no job": JSON null, which readers treat like an absent key.
json JobRef(const std::string& id) { return id.empty() ? json(nullptr) : json(id); }

// With --jobs-map only (absent otherwise, so reports without a map are unchanged).
json SchedulerJson(const SchedulerRef& s) {
  return {{"job_id", s.job_id}, {"user", s.user}, {"name", s.name}};
}

json JobJson(const ReportJob& job) {
  json stages = json::array();
  for (const auto& stage : job.layout.stages) stages.push_back(IpList(stage));
  json j = {
      {"id", job.id},
      {"gpus", IpList(job.gpus)},
      {"hosts", job.hosts},
      {"layout",
       {{"dp", job.layout.dp},
        {"pp", job.layout.pp},
        {"tp", job.layout.tp},
        {"microbatches", job.layout.microbatches},
        {"consistent", job.layout.consistent},
        {"stages", std::move(stages)}}},
      {"step_time",
       {{"median_s", job.step_time.median_s},
        {"p99_s", job.step_time.p99_s},
        {"steps", job.step_time.steps}}},
      {"windows", job.windows},
  };
  if (!job.scheduler.empty()) j["scheduler"] = SchedulerJson(job.scheduler);
  return j;
}

json PairJson(const ReportPair& p) {
  const analysis::PairEvidence& e = p.evidence;
  return {
      {"a", p.a.ToString()},
      {"b", p.b.ToString()},
      {"job", JobRef(p.job)},
      {"label", analysis::PairLabelName(p.label)},
      {"evidence",
       {{"flows", e.records},
        {"control_flows", e.control_records},
        {"transfers", e.transfers},
        {"steps", e.steps},
        {"sizes_mode", e.sizes_mode},
        {"bidirectional", e.bidirectional},
        {"aligned_starts", e.aligned_starts},
        {"both_way_steps", e.both_way_steps},
        {"ordered_steps", e.ordered_steps},
        {"step_ordered_share", e.step_ordered_share},
        {"rule", e.rule}}},
  };
}

// PairJson's bytes, written without the document (output/json_text.h): a report has a pair per
// GPU pair of every job, 192,000 at 100,000 GPUs.
void AppendPairJson(const ReportPair& p, std::string* out) {
  const analysis::PairEvidence& e = p.evidence;
  JsonText j(out);
  j.BeginObject();
  j.Key("a").String(p.a.ToString());
  j.Key("b").String(p.b.ToString());
  j.Key("evidence").BeginObject();
  j.Key("aligned_starts").Double(e.aligned_starts);
  j.Key("bidirectional").Bool(e.bidirectional);
  j.Key("both_way_steps").Int(e.both_way_steps);
  j.Key("control_flows").Int(e.control_records);
  j.Key("flows").Int(e.records);
  j.Key("ordered_steps").Int(e.ordered_steps);
  j.Key("rule").String(e.rule);
  j.Key("sizes_mode").Int(e.sizes_mode);
  j.Key("step_ordered_share").Double(e.step_ordered_share);
  j.Key("steps").Int(e.steps);
  j.Key("transfers").Int(e.transfers);
  j.EndObject();
  j.Key("job");
  if (p.job.empty()) j.Null();
  else j.String(p.job);
  j.Key("label").String(analysis::PairLabelName(p.label));
  j.EndObject();
}

json StepJson(const ReportStep& s, const ReportJsonOptions& options) {
  json out = {
      {"start_ns", s.start_ns},       {"end_ns", s.end_ns},         {"dp_start_ns", s.dp_start_ns},
      {"dp_end_ns", s.dp_end_ns},     {"compute_ns", s.compute_ns}, {"bubble_ns", s.bubble_ns},
  };
  if (options.pp_events) {
    json events = json::array();
    for (const auto& e : s.pp_events) {
      events.push_back({{"start_ns", e.start_ns},
                        {"end_ns", e.end_ns},
                        {"peer", e.peer.ToString()},
                        {"dir", e.forward ? "fwd" : "bwd"},
                        {"out", e.outgoing}});
    }
    out["pp_events"] = std::move(events);
  }
  return out;
}

json TimelineJson(const ReportTimeline& t, const ReportJsonOptions& options) {
  json steps = json::array();
  for (const auto& s : t.steps) steps.push_back(StepJson(s, options));
  return {{"gpu", t.gpu.ToString()}, {"job", JobRef(t.job)}, {"stage", t.stage},
          {"steps", std::move(steps)}};
}

// One (GPU, job) timeline in a line: its step count, span and median step (the upper median of
// an even count, in seconds; 0 without steps).
double MedianStepSeconds(const ReportTimeline& t, std::vector<int64_t>* durations) {
  durations->clear();
  for (const auto& s : t.steps) durations->push_back(s.end_ns - s.start_ns);
  if (durations->empty()) return 0;
  auto mid = durations->begin() + static_cast<ptrdiff_t>(durations->size() / 2);
  std::nth_element(durations->begin(), mid, durations->end());
  return static_cast<double>(*mid) / 1e9;
}

json TimelineSummaryJson(const ReportTimeline& t, std::vector<int64_t>* durations) {
  const double median_s = MedianStepSeconds(t, durations);
  return {{"gpu", t.gpu.ToString()},
          {"job", JobRef(t.job)},
          {"stage", t.stage},
          {"steps", t.steps.size()},
          {"start_ns", t.steps.empty() ? 0 : t.steps.front().start_ns},
          {"end_ns", t.steps.empty() ? 0 : t.steps.back().end_ns},
          {"median_step_s", median_s}};
}

// TimelineSummaryJson's bytes, written without the document: one per GPU and job.
void AppendTimelineSummaryJson(const ReportTimeline& t, std::vector<int64_t>* durations,
                               std::string* out) {
  const double median_s = MedianStepSeconds(t, durations);
  JsonText j(out);
  j.BeginObject();
  j.Key("end_ns").Int(t.steps.empty() ? 0 : t.steps.back().end_ns);
  j.Key("gpu").String(t.gpu.ToString());
  j.Key("job");
  if (t.job.empty()) j.Null();
  else j.String(t.job);
  j.Key("median_step_s").Double(median_s);
  j.Key("stage").Int(t.stage);
  j.Key("start_ns").Int(t.steps.empty() ? 0 : t.steps.front().start_ns);
  j.Key("steps").Int(t.steps.size());
  j.EndObject();
}

json CountersJson(const ReportCounters& c) {
  json servers = json::array();
  for (const auto& s : c.servers) {
    servers.push_back({{"name", s.name},
                       {"job", JobRef(s.job)},
                       {"mean_gbps", s.mean_gbps},
                       {"period_s", s.period_s},
                       {"period_strength", s.period_strength},
                       {"job_correlation", s.job_correlation},
                       {"nics", s.nics},
                       {"nic_gbps", s.nic_gbps}});
  }
  json jobs = json::array();
  for (const auto& j : c.jobs) {
    json iterations = json::array();
    for (const auto& [a, b] : j.iterations) iterations.push_back({a, b});
    json signature = json::object();
    for (size_t i = 0; i < j.nic_names.size(); ++i) signature[j.nic_names[i]] = j.signature[i];
    jobs.push_back({{"id", j.id},
                    {"period_s", j.period_s},
                    {"period_strength", j.period_strength},
                    {"server_gbps", j.server_gbps},
                    {"nic_signature", std::move(signature)},
                    {"iterations", std::move(iterations)},
                    {"resolution", {{"boundary_s", j.boundary_s},
                                    {"uncertainty_s", j.uncertainty_s},
                                    {"limit_s", j.resolution_limit_s},
                                    {"merged_iterations", j.merged_iterations}}},
                    {"plot", {{"start_ns", j.plot_start_ns},
                              {"bin_s", j.plot_bin_s},
                              {"gbps", j.traffic_gbps}}}});
  }
  return {{"poll_s", c.poll_s},
          {"poll_p90_s", c.poll_p90_s},
          {"refresh_s", c.refresh_s},
          {"stale_zero_fraction", c.stale_zero_fraction},
          {"bin_s", c.bin_s},
          {"ports", c.ports},
          {"polls", c.polls},
          {"bytes", c.bytes},
          {"servers", std::move(servers)},
          {"jobs", std::move(jobs)}};
}

}  // namespace

nlohmann::json FindingJson(const ReportFinding& f) {
  nlohmann::json j{
      {"kind", diagnosis::FindingKindName(f.kind)},
      {"severity", diagnosis::SeverityName(f.severity)},
      {"job", JobRef(f.job)},
      {"gpus", IpList(f.gpus)},
      {"switches", f.switches},
      {"hosts", f.hosts},
      {"start_ns", f.start_ns},
      {"end_ns", f.end_ns},
      {"metric", f.metric},
      {"value", f.value},
      {"baseline", f.baseline},
      {"sigma", f.sigma},
      {"units", f.units},
      {"cause", diagnosis::CauseName(f.cause)},
      {"summary", f.summary},
  };
  if (!f.scheduler.empty()) j["scheduler"] = SchedulerJson(f.scheduler);
  return j;
}

namespace {

json WindowJson(const ReportWindow& w) {
  json jw = {{"start_ns", w.start_ns},
             {"end_ns", w.end_ns},
             {"records", w.records},
             {"records_start_ns", w.records_start_ns},
             {"records_end_ns", w.records_end_ns},
             {"jobs", w.jobs},
             {"findings", w.findings}};
  // Only when a window was incomplete, cut short or not analysed (serve), so the reports of
  // `analyze` stay as they were.
  if (!w.records_lost.empty()) jw["records_lost"] = w.records_lost;
  if (w.nominal_start_ns != 0 && w.nominal_start_ns != w.start_ns) {
    jw["nominal_start_ns"] = w.nominal_start_ns;
  }
  if (!w.failed.empty()) jw["failed"] = w.failed;
  return jw;
}

// A top-level array of the report, made element by element: WriteReportJson writes each element
// as soon as it is made, so a large report is never held as one document.
struct ArraySection {
  std::string key;
  size_t size = 0;
  std::function<json(size_t)> element;
  // For the arrays of a hundred thousand elements: element i's text appended without building
  // it (the same bytes as element(i) dumped); empty for the others.
  std::function<void(size_t, std::string*)> append_text;
};

std::vector<ArraySection> ReportArrays(const Report& report, const ReportJsonOptions& options) {
  std::vector<ArraySection> out;
  auto add = [&](std::string key, const auto& items, auto make) {
    out.push_back(
        {std::move(key), items.size(), [&items, make](size_t i) { return make(items[i]); }, {}});
  };
  add("windows", report.windows, WindowJson);
  add("sources", report.sources, [](const ReportSource& s) -> json {
    return {{"path", s.path}, {"format", s.format}, {"records", s.records}};
  });
  add("jobs", report.jobs, JobJson);
  add("pairs", report.pairs, PairJson);
  out.back().append_text = [&pairs = report.pairs](size_t i, std::string* text) {
    AppendPairJson(pairs[i], text);
  };
  if (options.timelines) {
    add("timelines", report.timelines,
        [options](const ReportTimeline& t) { return TimelineJson(t, options); });
  } else {
    auto durations = std::make_shared<std::vector<int64_t>>();  // reused from one to the next
    add("timeline_summaries", report.timelines,
        [durations](const ReportTimeline& t) { return TimelineSummaryJson(t, durations.get()); });
    out.back().append_text = [&timelines = report.timelines, durations](size_t i,
                                                                        std::string* text) {
      AppendTimelineSummaryJson(timelines[i], durations.get(), text);
    };
  }
  add("findings", report.findings, FindingJson);
  return out;
}

// The report's other top-level keys.
json ReportScalars(const Report& report) {
  json doc = json::object();
  doc["version"] = kReportVersion;
  doc["mode"] = report.mode;
  if (report.mode == "counters") doc["counters"] = CountersJson(report.counters);
  doc["window"] = {
      {"start_ns", report.start_ns}, {"end_ns", report.end_ns}, {"seconds", report.window_s}};
  json input = json::object();
  const auto& values = report.input.values();
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != 0) input[kStatInfo[i].name] = values[i];
  }
  doc["input"] = std::move(input);
  return doc;
}

}  // namespace

json BuildReportJson(const Report& report, const ReportJsonOptions& options) {
  json doc = ReportScalars(report);
  for (const ArraySection& section : ReportArrays(report, options)) {
    json array = json::array();
    for (size_t i = 0; i < section.size; ++i) array.push_back(section.element(i));
    doc[section.key] = std::move(array);
  }
  return doc;
}

namespace {

// The lines of elements [lo, hi) of `section` appended to `text`, each but the array's last
// followed by a comma; `flush(text)` whenever the text has grown past 64 KB.
template <typename Flush>
void AppendElementLines(const ArraySection& section, size_t lo, size_t hi, std::string* text,
                        const Flush& flush) {
  auto dump = [](const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); };
  for (size_t i = lo; i < hi; ++i) {
    *text += "  ";
    if (section.append_text) section.append_text(i, text);
    else *text += dump(section.element(i));
    *text += i + 1 < section.size ? ",\n" : "\n";
    if (text->size() >= (size_t{1} << 16)) flush(text);
  }
}

// Below this many elements an array is not worth cutting between threads.
constexpr size_t kMinElementsToSplit = 4096;

bool SplitOnThreads(const ArraySection& section, const ReportJsonOptions& options) {
  return options.threads > 1 && section.append_text && section.size >= kMinElementsToSplit;
}

}  // namespace

Status WriteReportJson(const Report& report, std::ostream* out, const ReportJsonOptions& options) {
  // Host and switch names come from input files: never let bad UTF-8 throw.
  auto dump = [](const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); };
  // The keys in the order of BuildReportJson's object (sorted), each array's elements made and
  // written one by one.
  const json scalars = ReportScalars(report);
  const std::vector<ArraySection> arrays = ReportArrays(report, options);
  // With threads, the second half of each large array's text (pairs, timeline summaries: most of
  // the bytes) is made on a helper thread, in the order the keys are written, while this thread
  // writes the rest; each half is written once the first is out. The helper's sections are its
  // own (their makers keep scratch from one element to the next).
  std::vector<size_t> split;  // indices into `arrays`, by key
  for (size_t a = 0; a < arrays.size(); ++a) {
    if (SplitOnThreads(arrays[a], options)) split.push_back(a);
  }
  std::sort(split.begin(), split.end(),
            [&](size_t x, size_t y) { return arrays[x].key < arrays[y].key; });
  std::vector<std::promise<std::string>> second_half(arrays.size());
  std::jthread helper;
  if (!split.empty()) {
    helper = std::jthread([&report, &options, &second_half, split] {
      const std::vector<ArraySection> own = ReportArrays(report, options);
      size_t done = 0;
      try {
        for (; done < split.size(); ++done) {
          const size_t a = split[done];
          std::string text;
          AppendElementLines(own[a], own[a].size / 2, own[a].size, &text, [](std::string*) {});
          second_half[a].set_value(std::move(text));
        }
      } catch (...) {  // out of memory: the writer rethrows it where it waits
        for (; done < split.size(); ++done) {
          second_half[split[done]].set_exception(std::current_exception());
        }
      }
    });
  }
  std::map<std::string, std::function<void()>> keys;
  for (auto it = scalars.begin(); it != scalars.end(); ++it) {
    const json* value = &it.value();
    keys[it.key()] = [&out, &dump, value] { *out << dump(*value); };
  }
  for (size_t a = 0; a < arrays.size(); ++a) {
    const ArraySection& section = arrays[a];
    keys[section.key] = [&, a] {
      if (section.size == 0) return void(*out << "[]");
      *out << "[\n";
      std::string text;  // elements written a few hundred at a time
      auto flush = [&out](std::string* t) {
        *out << *t;
        t->clear();
      };
      const bool halves = SplitOnThreads(section, options);
      AppendElementLines(section, 0, halves ? section.size / 2 : section.size, &text, flush);
      *out << text;
      if (halves) *out << second_half[a].get_future().get();
      *out << "]";
    };
  }
  *out << "{\n";
  bool first_key = true;
  for (const auto& [key, write_value] : keys) {
    if (!first_key) *out << ",\n";
    first_key = false;
    *out << dump(json(key)) << ": ";
    write_value();
  }
  *out << "\n}\n";
  out->flush();
  if (!*out) return MakeError(ErrorCode::kDataLoss, "cannot write the report");
  return OkStatus();
}

}  // namespace prism::output
