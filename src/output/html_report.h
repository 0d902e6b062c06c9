// File: output/html_report.h
// `llmprism analyze --html FILE`: the Report (output/report.h) as one self-contained HTML page that
// opens from disk with no network: the page's data is a JSON document in a
// <script type="application/json" id="prism-data"> element, and its code (uPlot, vendored from npm
// with its MIT licence, plus report.js/report.css) is inlined from src/output/assets/, embedded in
// the binary at build time (output/html_assets.h).
//
// The page shows: a cluster overview (input, jobs, findings by severity), then per job a layout
// diagram (stages in order as columns, their hosts as rows), a step-time plot with slow steps
// marked, a per-GPU × step compute heatmap of every GPU, and a zoomable per-GPU timeline (compute,
// PP forward/backward, DP phase, bubble); the switches named in findings with their relative
// bandwidth; and the findings, each linked to where it shows.
//
// Size: the timeline rows of a job larger than HtmlReportOptions::max_gpus_all are sampled (one
// pipeline replica plus the GPUs named in findings, output/report_views.h), which the page says;
// the heatmap keeps every GPU (one number per GPU and step). The 2,880-GPU scenarios give ~3 MB.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "output/report.h"

namespace prism::output {

struct HtmlReportOptions {
  size_t max_gpus_all = 64;  // jobs up to this many GPUs get a timeline row per GPU
  std::string title = "llmprism report";
};

// The page's data document (exposed for tests).
nlohmann::json BuildHtmlReportData(const Report& report, const HtmlReportOptions& options = {});

// kDataLoss when the stream fails.
Status WriteHtmlReport(const Report& report, std::ostream* out,
                       const HtmlReportOptions& options = {});

}  // namespace prism::output
