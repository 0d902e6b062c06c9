// File: tests/testing/temp_path.h
// A temporary file path of this test process: STEM_<pid>SUFFIX in the system's temporary
// directory (the same path on every call with the same names). The pid keeps two test runs at once (two
// checkouts, or CTest running tests side by side) from writing the same file under each other.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace prism::testing {

inline std::string UniqueTempPath(std::string_view stem, std::string_view suffix) {
  return (std::filesystem::temp_directory_path() /
          (std::string(stem) + "_" + std::to_string(getpid()) + std::string(suffix)))
      .string();
}

}  // namespace prism::testing
