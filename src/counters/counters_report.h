// File: counters/counters_report.h
// Counters mode, last stage before the CLI: a CountersResult as the common report
// (output/report.h) with mode "counters": jobs with their servers as hosts and NIC addresses as
// GPUs, step-time summaries from the iterations, findings naming servers, and the counters section
// (servers, periods, per-NIC signatures, iterations, a per-job traffic series for plots).
#pragma once

#include <string>
#include <vector>

#include "core/stats.h"
#include "counters/counters_analysis.h"
#include "output/report.h"

namespace prism::counters {

struct CountersSource {
  std::string path;    // file, or the Prometheus URL
  std::string format;  // "counters-csv", "prometheus"
  uint64_t polls = 0;
};

output::Report BuildCountersReport(const CountersResult& result, const CountersData& data,
                                   const std::vector<CountersSource>& sources, const Stats& stats);

}  // namespace prism::counters
