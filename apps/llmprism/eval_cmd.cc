// File: apps/llmprism/eval_cmd.cc
// `llmprism eval --truth truth.json --report report.json [--json]`: scores an analysis report
// against the simulator's ground truth (src/eval; docs/design.md, Evaluation). Exit code 0 when
// scored, 2 when an input is missing or malformed (the message names the file and the key or parse
// position).
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_checks.h"

#include "eval/eval.h"

namespace {

struct EvalArgs {
  std::string truth_path;
  std::string report_path;
  bool json = false;
  double time_slack_s = 5.0;
  size_t max_localized_gpus = 8;
};

int RunEval(const EvalArgs& args) {
  prism::eval::EvalOptions options;
  options.time_slack_ns = static_cast<int64_t>(std::llround(args.time_slack_s * 1e9));
  options.max_localized_gpus = args.max_localized_gpus;
  auto result = prism::eval::EvaluateFiles(args.truth_path, args.report_path, options);
  if (!result) {
    fmt::print(stderr, "llmprism eval: {}\n", result.error().message);
    return 2;
  }
  if (args.json) {
    fmt::print("{}\n", prism::eval::EvalResultToJson(*result).dump(
                           2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("{}", prism::eval::FormatEvalText(*result));
  }
  return 0;
}

}  // namespace

void RegisterEvalCommand(CLI::App& app, int* exit_code) {
  // Option storage must outlive this function: the callback owns it.
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "Score a report against the simulator's ground truth");
  cmd->add_option("--truth", args->truth_path, "truth.json written by `llmprism simulate`")
      ->required();
  cmd->add_option("--report", args->report_path, "report.json written by `llmprism analyze`")
      ->required();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of a table");
  cmd->add_option("--time-slack-s", args->time_slack_s,
                  "Slack when matching a finding's time span to a fault's, in seconds")
      ->capture_default_str()
      ->check(cli_checks::kNonNegative);
  cmd->add_option("--max-localized-gpus", args->max_localized_gpus,
                  "Most GPUs a straggler finding may name and still localise it (one TP group)")
      ->capture_default_str()
      ->check(cli_checks::kPositive);
  cmd->callback([args, exit_code] { *exit_code = RunEval(*args); });
}
