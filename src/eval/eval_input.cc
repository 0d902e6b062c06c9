#include "eval/eval_input.h"

#include <limits>
#include <utility>

#include <fmt/format.h>

namespace prism::eval {
namespace {

using nlohmann::json;

// Reads typed fields out of one document, naming the document and the JSON path on error. Only
// the const accessors of nlohmann::json that cannot throw are used (find, is_*, get_ref after a
// type check), so nothing here throws.
class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  static std::string Sub(std::string_view path, std::string_view key) {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
  }
  static std::string Index(std::string_view path, size_t i) {
    return fmt::format("{}[{}]", path, i);
  }

  std::unexpected<Error> Missing(std::string_view path, std::string_view key) const {
    if (path.empty()) return MakeError(ErrorCode::kInvalidArgument, "{}: missing key '{}'", file_, key);
    return MakeError(ErrorCode::kInvalidArgument, "{}: {}: missing key '{}'", file_, path, key);
  }
  std::unexpected<Error> WrongType(std::string_view path, std::string_view want,
                                   const json& got) const {
    return MakeError(ErrorCode::kInvalidArgument, "{}: {}: expected {}, got {}", file_,
                     path.empty() ? "top level" : path, want, got.type_name());
  }

  // obj[key], or nullptr if absent (or null) and !required.
  StatusOr<const json*> Field(const json& obj, std::string_view path, std::string_view key,
                              bool required) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      if (required) return Missing(path, key);
      return nullptr;
    }
    return &*it;
  }

  StatusOr<const json*> Object(const json& v, std::string_view path) const {
    if (!v.is_object()) return WrongType(path, "object", v);
    return &v;
  }

  StatusOr<const json*> Array(const json& obj, std::string_view path, std::string_view key) const {
    PRISM_ASSIGN_OR_RETURN(const json* v, Field(obj, path, key, true));
    if (!v->is_array()) return WrongType(Sub(path, key), "array", *v);
    return v;
  }

  StatusOr<std::string> String(const json& obj, std::string_view path, std::string_view key,
                               bool required = true) const {
    PRISM_ASSIGN_OR_RETURN(const json* v, Field(obj, path, key, required));
    if (v == nullptr) return std::string();
    if (!v->is_string()) return WrongType(Sub(path, key), "string", *v);
    return v->get_ref<const std::string&>();
  }

  StatusOr<int64_t> Int(const json& obj, std::string_view path, std::string_view key) const {
    PRISM_ASSIGN_OR_RETURN(const json* v, Field(obj, path, key, true));
    if (v->is_number_unsigned()) {
      uint64_t u = v->get_ref<const json::number_unsigned_t&>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return WrongType(Sub(path, key), "64-bit signed integer", *v);
      }
      return static_cast<int64_t>(u);
    }
    if (v->is_number_integer()) return v->get_ref<const json::number_integer_t&>();
    return WrongType(Sub(path, key), "integer", *v);
  }

  StatusOr<std::vector<std::string>> StringArray(const json& v, std::string_view path) const {
    if (!v.is_array()) return WrongType(path, "array", v);
    std::vector<std::string> out;
    out.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) return WrongType(Index(path, i), "string", v[i]);
      out.push_back(v[i].get_ref<const std::string&>());
    }
    return out;
  }

  StatusOr<std::vector<std::string>> StringArray(const json& obj, std::string_view path,
                                                 std::string_view key, bool required) const {
    PRISM_ASSIGN_OR_RETURN(const json* v, Field(obj, path, key, required));
    if (v == nullptr) return std::vector<std::string>();
    return StringArray(*v, Sub(path, key));
  }

 private:
  std::string file_;
};

StatusOr<std::vector<InJob>> ParseJobs(const Reader& r, const json& doc) {
  PRISM_ASSIGN_OR_RETURN(const json* arr, r.Array(doc, "", "jobs"));
  std::vector<InJob> jobs;
  for (size_t i = 0; i < arr->size(); ++i) {
    std::string path = Reader::Index("jobs", i);
    PRISM_ASSIGN_OR_RETURN(const json* j, r.Object((*arr)[i], path));
    InJob job;
    PRISM_ASSIGN_OR_RETURN(job.id, r.String(*j, path, "id"));
    PRISM_ASSIGN_OR_RETURN(job.gpus, r.StringArray(*j, path, "gpus", true));
    PRISM_ASSIGN_OR_RETURN(const json* lay_v, r.Field(*j, path, "layout", true));
    std::string lpath = Reader::Sub(path, "layout");
    PRISM_ASSIGN_OR_RETURN(const json* lay, r.Object(*lay_v, lpath));
    PRISM_ASSIGN_OR_RETURN(job.layout.dp, r.Int(*lay, lpath, "dp"));
    PRISM_ASSIGN_OR_RETURN(job.layout.pp, r.Int(*lay, lpath, "pp"));
    PRISM_ASSIGN_OR_RETURN(job.layout.tp, r.Int(*lay, lpath, "tp"));
    PRISM_ASSIGN_OR_RETURN(const json* stages, r.Array(*lay, lpath, "stages"));
    std::string spath = Reader::Sub(lpath, "stages");
    for (size_t s = 0; s < stages->size(); ++s) {
      PRISM_ASSIGN_OR_RETURN(auto stage, r.StringArray((*stages)[s], Reader::Index(spath, s)));
      job.layout.stages.push_back(std::move(stage));
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// `job_required`: truth pairs must name their job (per-job accuracy needs it); report pairs may not.
StatusOr<std::vector<InPair>> ParsePairs(const Reader& r, const json& doc, bool job_required) {
  PRISM_ASSIGN_OR_RETURN(const json* arr, r.Array(doc, "", "pairs"));
  std::vector<InPair> pairs;
  pairs.reserve(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    std::string path = Reader::Index("pairs", i);
    PRISM_ASSIGN_OR_RETURN(const json* p, r.Object((*arr)[i], path));
    InPair pair;
    PRISM_ASSIGN_OR_RETURN(pair.a, r.String(*p, path, "a"));
    PRISM_ASSIGN_OR_RETURN(pair.b, r.String(*p, path, "b"));
    PRISM_ASSIGN_OR_RETURN(pair.job, r.String(*p, path, "job", job_required));
    PRISM_ASSIGN_OR_RETURN(pair.label, r.String(*p, path, "label"));
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

StatusOr<std::vector<InTimeline>> ParseTimelines(const Reader& r, const json& doc,
                                                 bool job_required) {
  PRISM_ASSIGN_OR_RETURN(const json* arr, r.Array(doc, "", "timelines"));
  std::vector<InTimeline> timelines;
  timelines.reserve(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    std::string path = Reader::Index("timelines", i);
    PRISM_ASSIGN_OR_RETURN(const json* t, r.Object((*arr)[i], path));
    InTimeline tl;
    PRISM_ASSIGN_OR_RETURN(tl.gpu, r.String(*t, path, "gpu"));
    PRISM_ASSIGN_OR_RETURN(tl.job, r.String(*t, path, "job", job_required));
    PRISM_ASSIGN_OR_RETURN(const json* steps, r.Array(*t, path, "steps"));
    std::string stpath = Reader::Sub(path, "steps");
    tl.steps.reserve(steps->size());
    for (size_t s = 0; s < steps->size(); ++s) {
      std::string spath = Reader::Index(stpath, s);
      PRISM_ASSIGN_OR_RETURN(const json* st, r.Object((*steps)[s], spath));
      InStep step;
      PRISM_ASSIGN_OR_RETURN(step.start_ns, r.Int(*st, spath, "start_ns"));
      PRISM_ASSIGN_OR_RETURN(step.end_ns, r.Int(*st, spath, "end_ns"));
      tl.steps.push_back(step);
    }
    timelines.push_back(std::move(tl));
  }
  return timelines;
}

StatusOr<std::vector<InFault>> ParseFaults(const Reader& r, const json& doc) {
  PRISM_ASSIGN_OR_RETURN(const json* arr, r.Array(doc, "", "faults"));
  std::vector<InFault> faults;
  for (size_t i = 0; i < arr->size(); ++i) {
    std::string path = Reader::Index("faults", i);
    PRISM_ASSIGN_OR_RETURN(const json* f, r.Object((*arr)[i], path));
    InFault fault;
    PRISM_ASSIGN_OR_RETURN(fault.id, r.String(*f, path, "id"));
    PRISM_ASSIGN_OR_RETURN(fault.kind, r.String(*f, path, "kind"));
    PRISM_ASSIGN_OR_RETURN(fault.cause, r.String(*f, path, "cause"));
    // A straggler has no switches and a switch fault may list no GPUs: absent means empty.
    PRISM_ASSIGN_OR_RETURN(fault.gpus, r.StringArray(*f, path, "gpus", false));
    PRISM_ASSIGN_OR_RETURN(fault.switches, r.StringArray(*f, path, "switches", false));
    PRISM_ASSIGN_OR_RETURN(fault.jobs, r.StringArray(*f, path, "jobs", false));
    PRISM_ASSIGN_OR_RETURN(fault.start_ns, r.Int(*f, path, "start_ns"));
    PRISM_ASSIGN_OR_RETURN(fault.end_ns, r.Int(*f, path, "end_ns"));
    faults.push_back(std::move(fault));
  }
  return faults;
}

StatusOr<std::vector<InFabricEvent>> ParseFabricEvents(const Reader& r, const json& doc) {
  std::vector<InFabricEvent> events;
  if (!doc.contains("fabric_events")) return events;
  PRISM_ASSIGN_OR_RETURN(const json* arr, r.Array(doc, "", "fabric_events"));
  for (size_t i = 0; i < arr->size(); ++i) {
    std::string path = Reader::Index("fabric_events", i);
    PRISM_ASSIGN_OR_RETURN(const json* e, r.Object((*arr)[i], path));
    InFabricEvent ev;
    PRISM_ASSIGN_OR_RETURN(ev.kind, r.String(*e, path, "kind"));
    PRISM_ASSIGN_OR_RETURN(ev.switches, r.StringArray(*e, path, "switches", true));
    PRISM_ASSIGN_OR_RETURN(ev.start_ns, r.Int(*e, path, "start_ns"));
    PRISM_ASSIGN_OR_RETURN(ev.end_ns, r.Int(*e, path, "end_ns"));
    events.push_back(std::move(ev));
  }
  return events;
}

StatusOr<std::vector<InFinding>> ParseFindings(const Reader& r, const json& doc) {
  PRISM_ASSIGN_OR_RETURN(const json* arr, r.Array(doc, "", "findings"));
  std::vector<InFinding> findings;
  for (size_t i = 0; i < arr->size(); ++i) {
    std::string path = Reader::Index("findings", i);
    PRISM_ASSIGN_OR_RETURN(const json* f, r.Object((*arr)[i], path));
    InFinding fd;
    PRISM_ASSIGN_OR_RETURN(fd.kind, r.String(*f, path, "kind"));
    PRISM_ASSIGN_OR_RETURN(fd.severity, r.String(*f, path, "severity"));
    // A switch finding need not name a job, a job finding need not name switches.
    PRISM_ASSIGN_OR_RETURN(fd.job, r.String(*f, path, "job", false));
    PRISM_ASSIGN_OR_RETURN(fd.gpus, r.StringArray(*f, path, "gpus", false));
    PRISM_ASSIGN_OR_RETURN(fd.switches, r.StringArray(*f, path, "switches", false));
    PRISM_ASSIGN_OR_RETURN(fd.cause, r.String(*f, path, "cause", false));
    PRISM_ASSIGN_OR_RETURN(fd.start_ns, r.Int(*f, path, "start_ns"));
    PRISM_ASSIGN_OR_RETURN(fd.end_ns, r.Int(*f, path, "end_ns"));
    findings.push_back(std::move(fd));
  }
  return findings;
}

}  // namespace

StatusOr<TruthDoc> ParseTruth(const nlohmann::json& doc, std::string_view name) {
  Reader r(name);
  PRISM_RETURN_IF_ERROR(r.Object(doc, ""));
  TruthDoc t;
  PRISM_ASSIGN_OR_RETURN(t.jobs, ParseJobs(r, doc));
  PRISM_ASSIGN_OR_RETURN(t.pairs, ParsePairs(r, doc, /*job_required=*/true));
  PRISM_ASSIGN_OR_RETURN(t.timelines, ParseTimelines(r, doc, /*job_required=*/true));
  PRISM_ASSIGN_OR_RETURN(t.faults, ParseFaults(r, doc));
  PRISM_ASSIGN_OR_RETURN(t.fabric_events, ParseFabricEvents(r, doc));
  return t;
}

StatusOr<ReportDoc> ParseReport(const nlohmann::json& doc, std::string_view name) {
  Reader r(name);
  PRISM_RETURN_IF_ERROR(r.Object(doc, ""));
  ReportDoc rep;
  PRISM_ASSIGN_OR_RETURN(rep.jobs, ParseJobs(r, doc));
  PRISM_ASSIGN_OR_RETURN(rep.pairs, ParsePairs(r, doc, /*job_required=*/false));
  // `analyze` writes per-step timelines only when asked: say how to get them, not just that the
  // key is missing.
  if (doc.contains("timeline_summaries") && !doc.contains("timelines")) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{}: has timeline summaries but no per-step timelines: write the report "
                     "with `llmprism analyze --timelines`",
                     name);
  }
  PRISM_ASSIGN_OR_RETURN(rep.timelines, ParseTimelines(r, doc, /*job_required=*/false));
  PRISM_ASSIGN_OR_RETURN(rep.findings, ParseFindings(r, doc));
  return rep;
}

}  // namespace prism::eval
