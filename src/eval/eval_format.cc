// Presentation of an EvalResult: the `eval --json` object and the human-readable table.
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "eval/eval.h"

namespace prism::eval {
namespace {

using nlohmann::json;

json OptionalToJson(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json OptionalToJson(const std::optional<size_t>& v) { return v ? json(*v) : json(nullptr); }

double Ratio(size_t num, size_t den) {
  return den == 0 ? 1.0 : static_cast<double>(num) / static_cast<double>(den);
}

std::string Opt(const std::optional<double>& v) {
  return v ? fmt::format("{:.6f}", *v) : std::string("n/a");
}

std::string Opt(const std::optional<size_t>& v) {
  return v ? fmt::format("#{}", *v) : std::string("-");
}

const char* YesNo(bool b) { return b ? "yes" : "no"; }

// The raw counts every fraction of the evaluation is computed from.
json CountsJson(const EvalCounts& c) {
  return {
      {"truth_jobs", c.truth_jobs},
      {"report_jobs", c.report_jobs},
      {"truth_gpus", c.truth_gpus},
      {"jobs_exact", c.jobs_exact},
      {"layouts_exact", c.layouts_exact},
      {"truth_pairs", c.truth_pairs},
      {"pairs_correct", c.pairs_correct},
      {"pairs_wrong_label", c.pairs_wrong_label},
      {"pairs_missing", c.pairs_missing},
      {"pairs_extra", c.pairs_extra},
      {"pairs_extra_labelled", c.pairs_extra_labelled},
      {"truth_steps", c.truth_steps},
      {"steps_matched", c.steps_matched},
      {"steps_invalid", c.steps_invalid},
      {"findings", c.findings},
      {"findings_scored", c.findings_scored},
      {"findings_matching", c.findings_matching},
      {"findings_on_fabric_events", c.findings_on_fabric_events},
      {"faults", c.faults},
      {"faults_matched", c.faults_matched},
      {"faults_localized", c.faults_localized},
      {"faults_cause", c.faults_cause},
  };
}

}  // namespace

nlohmann::json EvalResultToJson(const EvalResult& r) {
  const EvalCounts& c = r.counts;
  json out = json::object();
  out["jobs_exact_fraction"] = r.jobs_exact_fraction;
  out["jobs_ari"] = r.jobs_ari;
  out["pairs_accuracy"] = r.pairs_accuracy;
  out["pairs_extra_labelled"] = c.pairs_extra_labelled;
  out["layout_exact_fraction"] = r.layout_exact_fraction;
  out["step_error_p50"] = OptionalToJson(r.step_error_p50);
  out["step_error_p99"] = OptionalToJson(r.step_error_p99);
  out["step_error_max"] = OptionalToJson(r.step_error_max);
  out["steps_matched_fraction"] = r.steps_matched_fraction;
  out["faults_precision"] = r.faults_precision;
  out["faults_recall"] = r.faults_recall;
  out["faults_localized_fraction"] = r.faults_localized_fraction;
  out["faults_cause_fraction"] = r.faults_cause_fraction;

  json jobs = json::array();
  for (const JobDetail& j : r.jobs) {
    jobs.push_back({
        {"truth_id", j.truth_id},
        {"layout", j.layout},
        {"truth_gpus", j.truth_gpus},
        {"report_id", j.report_id.empty() ? json(nullptr) : json(j.report_id)},
        {"report_gpus", j.report_gpus},
        {"overlap_gpus", j.overlap_gpus},
        {"exact", j.exact},
        {"layout_match",
         {{"dp", j.dp_match},
          {"pp", j.pp_match},
          {"tp", j.tp_match},
          {"order", j.order_match},
          {"exact", j.layout_exact}}},
        {"pairs_total", j.pairs_total},
        {"pairs_correct", j.pairs_correct},
        {"pairs_accuracy", Ratio(j.pairs_correct, j.pairs_total)},
        {"steps_total", j.steps_total},
        {"steps_matched", j.steps_matched},
    });
  }

  json layouts = json::array();
  for (const LayoutDetail& l : r.layouts) {
    layouts.push_back({
        {"layout", l.layout},
        {"jobs", l.jobs},
        {"jobs_layout_exact", l.jobs_layout_exact},
        {"pairs_total", l.pairs_total},
        {"pairs_correct", l.pairs_correct},
        {"pairs_accuracy", Ratio(l.pairs_correct, l.pairs_total)},
    });
  }

  json faults = json::array();
  for (const FaultDetail& f : r.faults) {
    faults.push_back({
        {"id", f.id},
        {"kind", f.kind},
        {"cause", f.cause},
        {"matched", !f.matching_findings.empty()},
        {"localized", f.localizing_finding.has_value()},
        {"cause_correct", f.cause_finding.has_value()},
        {"matching_findings", f.matching_findings},
        {"localizing_finding", OptionalToJson(f.localizing_finding)},
        {"cause_finding", OptionalToJson(f.cause_finding)},
    });
  }

  out["details"] = {
      {"counts", CountsJson(c)},
      {"jobs", std::move(jobs)},
      {"layouts", std::move(layouts)},
      {"faults", std::move(faults)},
      {"false_positive_findings", r.false_positive_findings},
  };
  return out;
}

namespace {

// One line per metric: name, value, and the counts it comes from.
void AppendMetricLines(const EvalResult& r, std::string* s) {
  const EvalCounts& c = r.counts;
  auto out = std::back_inserter(*s);
  auto line = [&](std::string_view name, std::string_view value, std::string_view detail) {
    fmt::format_to(out, "{:<28} {:>10}{}{}\n", name, value, detail.empty() ? "" : "  ", detail);
  };
  auto row = [&](std::string_view name, double v, const std::string& detail) {
    line(name, fmt::format("{:.6f}", v), detail);
  };
  auto opt_row = [&](std::string_view name, const std::optional<double>& v) {
    line(name, Opt(v), "");
  };
  line("metric", "value", "counts");
  row("jobs_exact_fraction", r.jobs_exact_fraction,
      fmt::format("{}/{} truth jobs ({} report jobs)", c.jobs_exact, c.truth_jobs, c.report_jobs));
  row("jobs_ari", r.jobs_ari, fmt::format("over {} truth GPUs", c.truth_gpus));
  row("pairs_accuracy", r.pairs_accuracy,
      fmt::format("{}/{} ({} wrong label, {} missing, {} extra, {} of them labelled dp/pp/tp)",
                  c.pairs_correct, c.truth_pairs, c.pairs_wrong_label, c.pairs_missing,
                  c.pairs_extra, c.pairs_extra_labelled));
  line("pairs_extra_labelled", fmt::format("{}", c.pairs_extra_labelled),
       "report pairs labelled dp/pp/tp that the truth does not list (an error)");
  row("layout_exact_fraction", r.layout_exact_fraction,
      fmt::format("{}/{}", c.layouts_exact, c.truth_jobs));
  opt_row("step_error_p50", r.step_error_p50);
  opt_row("step_error_p99", r.step_error_p99);
  opt_row("step_error_max", r.step_error_max);
  row("steps_matched_fraction", r.steps_matched_fraction,
      fmt::format("{}/{} truth steps ({} invalid skipped)", c.steps_matched, c.truth_steps,
                  c.steps_invalid));
  row("faults_precision", r.faults_precision,
      fmt::format("{}/{} warning+ findings ({} findings in all{})", c.findings_matching,
                  c.findings_scored - c.findings_on_fabric_events, c.findings,
                  c.findings_on_fabric_events == 0
                      ? std::string()
                      : fmt::format("; {} more on links the simulated fabric congested by itself, "
                                    "not scored",
                                    c.findings_on_fabric_events)));
  row("faults_recall", r.faults_recall, fmt::format("{}/{} faults", c.faults_matched, c.faults));
  row("faults_localized_fraction", r.faults_localized_fraction,
      fmt::format("{}/{}", c.faults_localized, c.faults));
  row("faults_cause_fraction", r.faults_cause_fraction,
      fmt::format("{}/{}", c.faults_cause, c.faults));
}

// Per truth job: its layout and how the report's job matched it.
void AppendJobTable(const std::vector<JobDetail>& jobs, std::string* s) {
  if (jobs.empty()) return;
  auto out = std::back_inserter(*s);
  fmt::format_to(out, "\n{:<12} {:<12} {:>6} {:<12} {:>6} {:>7} {:<5} {:<3} {:<3} {:<3} {:<5} "
                 "{:>13} {:>13}\n",
                 "truth job", "layout", "gpus", "report job", "gpus", "overlap", "exact", "dp",
                 "pp", "tp", "order", "pairs ok", "steps matched");
  for (const JobDetail& j : jobs) {
    fmt::format_to(out, "{:<12} {:<12} {:>6} {:<12} {:>6} {:>7} {:<5} {:<3} {:<3} {:<3} {:<5} "
                   "{:>13} {:>13}\n",
                   j.truth_id, j.layout, j.truth_gpus, j.report_id.empty() ? "-" : j.report_id,
                   j.report_gpus, j.overlap_gpus, YesNo(j.exact), YesNo(j.dp_match),
                   YesNo(j.pp_match), YesNo(j.tp_match), YesNo(j.order_match),
                   fmt::format("{}/{}", j.pairs_correct, j.pairs_total),
                   fmt::format("{}/{}", j.steps_matched, j.steps_total));
  }
}

// Per layout: jobs, layouts exact and pairs labelled right.
void AppendLayoutTable(const std::vector<LayoutDetail>& layouts, std::string* s) {
  if (layouts.empty()) return;
  auto out = std::back_inserter(*s);
  fmt::format_to(out, "\n{:<12} {:>5} {:>13} {:>13} {:>10}\n", "layout", "jobs", "layout exact",
                 "pairs ok", "accuracy");
  for (const LayoutDetail& l : layouts) {
    fmt::format_to(out, "{:<12} {:>5} {:>13} {:>13} {:>10.6f}\n", l.layout, l.jobs,
                   l.jobs_layout_exact, fmt::format("{}/{}", l.pairs_correct, l.pairs_total),
                   Ratio(l.pairs_correct, l.pairs_total));
  }
}

// Per injected fault: the findings matching it, and which localized it and named its cause.
void AppendFaultTable(const std::vector<FaultDetail>& faults, std::string* s) {
  if (faults.empty()) return;
  auto out = std::back_inserter(*s);
  fmt::format_to(out, "\n{:<10} {:<16} {:<8} {:<20} {:>10} {:>10}\n", "fault", "kind", "cause",
                 "matching findings", "localized", "cause ok");
  for (const FaultDetail& f : faults) {
    std::string matches = f.matching_findings.empty()
                              ? std::string("-")
                              : fmt::format("#{}", fmt::join(f.matching_findings, ",#"));
    fmt::format_to(out, "{:<10} {:<16} {:<8} {:<20} {:>10} {:>10}\n", f.id, f.kind, f.cause,
                   matches, Opt(f.localizing_finding), Opt(f.cause_finding));
  }
}

}  // namespace

std::string FormatEvalText(const EvalResult& r) {
  std::string s;
  AppendMetricLines(r, &s);
  AppendJobTable(r.jobs, &s);
  AppendLayoutTable(r.layouts, &s);
  AppendFaultTable(r.faults, &s);
  if (!r.false_positive_findings.empty()) {
    fmt::format_to(std::back_inserter(s), "\nfindings matching no fault: #{}\n",
                   fmt::join(r.false_positive_findings, ", #"));
  }
  return s;
}

}  // namespace prism::eval
