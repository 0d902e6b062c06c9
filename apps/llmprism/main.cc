// llmprism: black-box performance diagnosis of LLM training jobs from switch-level flow records.
// Subcommands are registered by their own *_cmd.cc files; main only dispatches.
#include <exception>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "heap_huge_pages.h"

// One Register*Command per *_cmd.cc: adds its subcommand to `app`; the subcommand's callback runs
// during parse and stores the process exit code in *exit_code (0 ok, 1 input problems counted,
// 2 unusable input or arguments).
void RegisterSimulateCommand(CLI::App& app, int* exit_code);
void RegisterAnalyzeCommand(CLI::App& app, int* exit_code);
void RegisterEvalCommand(CLI::App& app, int* exit_code);
void RegisterServeCommand(CLI::App& app, int* exit_code);
void RegisterReplayCommand(CLI::App& app, int* exit_code);
void RegisterPublishCommand(CLI::App& app, int* exit_code);
void RegisterRecogniseCommand(CLI::App& app, int* exit_code);

int main(int argc, char** argv) {
  // `analyze` only: a run of seconds to minutes whose heap grows by hundreds of MB. A long-lived
  // `serve` keeps small pages (heap_huge_pages.h says why).
  if (argc > 1 && std::string_view(argv[1]) == "analyze") {
    prism::app::ReexecWithHugePageHeap(argv);  // returns only when nothing is to be done
  }
  CLI::App app{"llmprism: diagnose LLM training jobs from switch-level flow records"};
  app.require_subcommand(1);
  int exit_code = 0;
  RegisterSimulateCommand(app, &exit_code);
  RegisterAnalyzeCommand(app, &exit_code);
  RegisterEvalCommand(app, &exit_code);
  RegisterServeCommand(app, &exit_code);
  RegisterReplayCommand(app, &exit_code);
  RegisterPublishCommand(app, &exit_code);
  RegisterRecogniseCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    // Last resort: the subcommands report their errors themselves; anything that still escapes
    // (a library throwing on an input nobody checked) is an error message and exit 2, not abort.
    fmt::print(stderr, "llmprism: error: {}\n", e.what());
    return 2;
  }
  return exit_code;
}
