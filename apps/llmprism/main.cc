// llmprism: black-box performance diagnosis of LLM training jobs from switch-level flow records.
// Subcommands are registered by their own *_cmd.cc files; main only dispatches.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

int main(int argc, char** argv) {
  CLI::App app{"llmprism: diagnose LLM training jobs from switch-level flow records"};
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return 0;
}
