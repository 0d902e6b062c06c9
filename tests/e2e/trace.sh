#!/usr/bin/env bash
# Chrome trace of `tiny`: simulate, analyze with --report --pp-events --trace, then the
# GoogleTest ChromeTraceFile.* parses the trace (nlohmann) and checks it against the report:
# well-formed, slices nested per thread, step slices on the report's ns, every flow finished.
#   trace.sh LLMPRISM PRISM_UNITTESTS WORKDIR
set -euo pipefail
bin=$1 unittests=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
"$bin" simulate --scenario tiny --seed 1 --out "$work" >/dev/null
"$bin" analyze "$work/flows.ipfix" --topology "$work/topology.csv" --report "$work/report.json" \
  --pp-events --trace "$work/trace.json" >/dev/null
echo "trace: $(stat -c %s "$work/trace.json") bytes"
out=$(PRISM_TRACE_FILE="$work/trace.json" PRISM_TRACE_REPORT="$work/report.json" \
  "$unittests" --gtest_filter='ChromeTraceFile.*') || { echo "$out"; exit 1; }
echo "$out" | tail -3
# A skipped test would pass silently: insist that it ran.
echo "$out" | grep -q '\[  PASSED  \] 1 test' && ! echo "$out" | grep -q SKIPPED
