#include "sim/truth.h"

#include <nlohmann/json.hpp>

namespace prism::sim {

Status WriteTruthJson(const Truth& truth, std::ostream* out) {
  using nlohmann::json;
  json j;
  j["version"] = 1;
  j["scenario"] = truth.scenario;
  j["seed"] = truth.seed;
  j["start_ns"] = truth.start_ns;
  j["end_ns"] = truth.end_ns;
  j["records"] = truth.records;
  json jobs = json::array();
  for (const auto& job : truth.jobs) {
    jobs.push_back({{"id", job.id},
                    {"gpus", job.gpus},
                    {"hosts", job.hosts},
                    {"layout",
                     {{"dp", job.dp},
                      {"pp", job.pp},
                      {"tp", job.tp},
                      {"microbatches", job.microbatches},
                      {"schedule", job.schedule},
                      {"zero", job.zero},
                      {"stages", job.stages}}}});
  }
  j["jobs"] = std::move(jobs);
  json pairs = json::array();
  for (const auto& p : truth.pairs)
    pairs.push_back({{"a", p.a}, {"b", p.b}, {"job", p.job}, {"label", p.label}});
  j["pairs"] = std::move(pairs);
  json timelines = json::array();
  for (const auto& t : truth.timelines) {
    json steps = json::array();
    for (const auto& s : t.steps)
      steps.push_back({{"start_ns", s.start_ns},
                       {"end_ns", s.end_ns},
                       {"dp_start_ns", s.dp_start_ns},
                       {"dp_end_ns", s.dp_end_ns}});
    timelines.push_back({{"gpu", t.gpu}, {"job", t.job}, {"steps", std::move(steps)}});
  }
  j["timelines"] = std::move(timelines);
  json faults = json::array();
  for (const auto& f : truth.faults) {
    faults.push_back({{"id", f.id},
                      {"kind", f.kind},
                      {"cause", f.cause},
                      {"gpus", f.gpus},
                      {"switches", f.switches},
                      {"jobs", f.jobs},
                      {"start_ns", f.start_ns},
                      {"end_ns", f.end_ns},
                      {"factor", f.factor}});
  }
  j["faults"] = std::move(faults);
  json fabric_events = json::array();
  for (const auto& e : truth.fabric_events) {
    fabric_events.push_back({{"kind", e.kind},
                             {"switches", e.switches},
                             {"direction", e.direction},
                             {"start_ns", e.start_ns},
                             {"end_ns", e.end_ns},
                             {"squeezed_share", e.squeezed_share}});
  }
  j["fabric_events"] = std::move(fabric_events);
  *out << j.dump(1) << '\n';
  if (!*out) return MakeError(ErrorCode::kInternal, "failed writing truth.json");
  return OkStatus();
}

}  // namespace prism::sim
