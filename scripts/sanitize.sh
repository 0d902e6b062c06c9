#!/usr/bin/env bash
# Builds the `asan` preset (ASan + UBSan, RelWithDebInfo, build-asan/) and runs the unit tests in
# it; any sanitizer report fails the run (UBSan does not recover, ASan aborts). Separate from CI.
# Usage: scripts/sanitize.sh [GTEST_FILTER]   e.g. scripts/sanitize.sh 'Dispatch*:PcapReader*'
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-*}
cmake --preset asan >/dev/null
cmake --build --preset asan --target prism_unittests
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
build-asan/tests/prism_unittests --gtest_filter="$filter" --gtest_brief=1
echo "sanitize: unit tests clean under ASan + UBSan"
