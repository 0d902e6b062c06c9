// File: output/report_json.h
// report.json (docs/report-schema.md, version 1): the Report of output/report.h as JSON. GPUs are
// named by address, every array is sorted, object keys come out in alphabetical order (nlohmann's
// std::map objects) and floats use nlohmann's shortest round-trip form, so the same Report always
// gives the same bytes.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "output/report.h"

namespace prism::output {

inline constexpr int kReportVersion = 1;

struct ReportJsonOptions {
  // Per-step PP events ("pp_events") multiply a report's size by ~10 on deep pipelines; off unless
  // asked for (`llmprism analyze --pp-events`).
  bool pp_events = false;
  // Every GPU's steps ("timelines", ~80% of a report's bytes at 10,000 GPUs). Without them the
  // report holds one line per (GPU, job) instead ("timeline_summaries": steps, span, median step).
  // `llmprism analyze` writes them only when asked (--timelines, or an output built from them);
  // the service's report always has them.
  bool timelines = true;
  // WriteReportJson: more than 1 makes the text of the largest arrays on a second thread too
  // (the same bytes).
  int threads = 1;
};

nlohmann::json BuildReportJson(const Report& report, const ReportJsonOptions& options = {});

// One finding as the report (and the service's API) writes it.
nlohmann::json FindingJson(const ReportFinding& finding);

// Writes BuildReportJson() with one top-level key per line and one array element per line
// (compact within an element): diffable and grep-able, yet a fraction of the size of a fully
// indented dump. kDataLoss when the stream fails.
Status WriteReportJson(const Report& report, std::ostream* out,
                       const ReportJsonOptions& options = {});

}  // namespace prism::output
