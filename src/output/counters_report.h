// File: output/counters_report.h
// Counters mode's report (docs/counters.md), the last stage before the CLI: a CountersResult as the
// common report (output/report.h) with mode "counters": jobs with their servers as hosts and NIC
// addresses as GPUs, step-time summaries from the iterations, findings naming servers, and the
// counters section (servers, periods, per-NIC signatures, iterations, a per-job traffic series for
// plots).
#pragma once

#include <string>
#include <vector>

#include "core/stats.h"
#include "counters/counters_analysis.h"
#include "output/report.h"

namespace prism::output {

struct CountersSource {
  std::string path;    // file, or the Prometheus URL
  std::string format;  // "counters-csv", "prometheus"
  uint64_t polls = 0;
};

Report BuildCountersReport(const counters::CountersResult& result,
                           const counters::CountersData& data,
                           const std::vector<CountersSource>& sources, const Stats& stats);

}  // namespace prism::output
