// File: apps/llmprism/output_file.h
// Writing one of a subcommand's output files (report JSON, HTML page, Chrome trace): the same
// checks and messages for every one of them, so a full disk or a bad path reads alike whichever
// output it hit.
#pragma once

#include <fstream>
#include <ostream>
#include <string>

#include "core/status.h"

namespace output_file {

// Writes `path` with `write(std::ostream*) -> prism::Status`: kInvalidArgument when the file
// cannot be opened, kDataLoss when writing fails, each naming the file and `what` it is
// ("report", "HTML report", "trace").
template <typename WriteFn>
prism::Status WriteOutputFile(const std::string& path, const char* what, WriteFn write) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return prism::MakeError(prism::ErrorCode::kInvalidArgument,
                            "{}: cannot open the {} for writing", path, what);
  }
  prism::Status written = write(&out);
  out.close();
  if (!written || !out) {
    return prism::MakeError(prism::ErrorCode::kDataLoss, "{}: cannot write the {}", path, what);
  }
  return prism::OkStatus();
}

}  // namespace output_file
