// File: apps/llmprism/cli_checks.h
// Validators for the subcommands' numeric options. CLI11's own PositiveNumber and Range let NaN
// through (every comparison with NaN is false), and a huge number of seconds overflows int64 once
// turned into nanoseconds; these refuse both at parse time, so a bad number is a usage error
// (exit 2 with the option named) and never reaches the code that sizes buffers or loops on it.
#pragma once

#include <cmath>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace cli_checks {

// A finite number in [min, max] (min excluded when `min_exclusive`).
inline CLI::Validator FiniteIn(double min, double max, bool min_exclusive, std::string name) {
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(input, v) || !std::isfinite(v)) {
          return fmt::format("'{}' is not a finite number", input);
        }
        if ((min_exclusive ? v <= min : v < min) || v > max) {
          return fmt::format("{} is out of range: expected {}", input, name);
        }
        return std::string();
      },
      name);
}

// Seconds and other positive quantities: > 0 and at most 1e9 (31 years; 1e9 s in ns still fits
// int64 with room for sums).
inline const CLI::Validator kPositive = FiniteIn(0, 1e9, true, "a number > 0 and <= 1e9");
inline const CLI::Validator kNonNegative = FiniteIn(0, 1e9, false, "a number >= 0 and <= 1e9");

}  // namespace cli_checks
