#!/usr/bin/env bash
# Golden reports, compared byte for byte (as btest baselines are): for each case directory beside
# this script, simulate with the arguments in its `simulate.args`, analyze the flows with those in
# its `analyze.args`, and compare the report JSON with the committed `expected.json`. A difference
# fails the test and prints the start of a unified diff; after an intended change of the report,
# run with --update, review `git diff tests/golden/report` and commit it.
# Usage: run.sh LLMPRISM WORK_DIR [--update] [CASE...]   (default: every case)
set -euo pipefail
llmprism=$1
work=$2
shift 2
update=0
if [[ ${1:-} == --update ]]; then
  update=1
  shift
fi
here=$(cd "$(dirname "$0")" && pwd)
cases=("$@")
if [[ ${#cases[@]} -eq 0 ]]; then
  for d in "$here"/*/; do cases+=("$(basename "$d")"); done
fi
status=0
for c in "${cases[@]}"; do
  dir=$here/$c
  out=$work/$c
  rm -rf "$out"
  mkdir -p "$out"
  read -r -a sim_args < "$dir/simulate.args"
  read -r -a analyze_args < "$dir/analyze.args"
  "$llmprism" simulate "${sim_args[@]}" --out "$out" > "$out/simulate.log"
  # Relative input paths: the report names its sources as given.
  rc=0
  (cd "$out" && "$llmprism" analyze flows.ipfix --topology topology.csv "${analyze_args[@]}" \
       --report report.json --timelines > analyze.log 2>&1) || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "golden $c: analyze exited $rc" >&2
    cat "$out/analyze.log" >&2
    status=1
    continue
  fi
  if [[ $update -eq 1 ]]; then
    cp "$out/report.json" "$dir/expected.json"
    echo "golden $c: expected.json updated ($(wc -c < "$dir/expected.json") bytes)"
  elif cmp -s "$dir/expected.json" "$out/report.json"; then
    echo "golden $c: report identical to expected.json ($(wc -c < "$out/report.json") bytes)"
  else
    echo "golden $c: report differs from $dir/expected.json (run.sh ... --update after an" \
         "intended change):" >&2
    diff -u "$dir/expected.json" "$out/report.json" | head -40 >&2 || true
    status=1
  fi
done
exit $status
