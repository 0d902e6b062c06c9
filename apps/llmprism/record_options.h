// File: apps/llmprism/record_options.h
// --max-record-s, registered once so `analyze` and `serve` take the same flag with the same
// default (pipeline/record_duration.h) and turn it into nanoseconds the same way. What happens
// to a record over the limit is said by each command: `analyze` counts it as
// record_bad_duration, `serve` as implausible_time.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "cli_checks.h"
#include "pipeline/record_duration.h"

struct RecordCliArgs {
  double max_record_s = prism::pipeline::kDefaultMaxRecordS;

  int64_t max_record_ns() const { return std::llround(max_record_s * 1e9); }
};

// `consequence` completes the help: what the command does with a record over the limit.
inline void AddRecordOptions(CLI::App* cmd, RecordCliArgs* args, const std::string& consequence) {
  cmd->add_option("--max-record-s", args->max_record_s,
                  "Longest plausible flow record in seconds; a record lasting longer, or ending "
                  "before it starts, " + consequence)
      ->capture_default_str()
      ->check(cli_checks::kPositive);
}
