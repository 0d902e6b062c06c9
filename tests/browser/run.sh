#!/usr/bin/env bash
# Browser test of the HTML report: simulates `faults` and `paper`, writes their reports
# with `analyze --html`, and loads each in headless Debian chromium through playwright-core
# (report_page.mjs): no console errors or network requests, renders within 10 s, < 10 MB, the
# timeline and the straggler finding visible, clicking the finding scrolls to and highlights its
# GPUs. Then counters mode: the real port-counter excerpt (tests/counters/zhejiang_excerpt) and
# the simulated `counters-ops` (a stall, a slow server, a checkpoint rhythm), each finding of
# warning or critical listed and, clicked, shaded on its job's traffic plot. Screenshots go to
# ARTIFACTS/{faults,faults-finding,paper,counters-real,counters-ops}*.png.
#   run.sh LLMPRISM WORKDIR ARTIFACTS
# playwright-core comes from the npm registry into WORKDIR/node_modules (pinned in package.json;
# installed once, reused after). Never `npx playwright install`: the browser is /usr/bin/chromium.
set -euo pipefail
bin=$1 work=$2 artifacts=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work" "$artifacts"
command -v node >/dev/null || { echo "node is missing: run scripts/setup.sh" >&2; exit 1; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "chromium is missing: run scripts/setup.sh" >&2; exit 1; }
if ! cmp -s "$here/package.json" "$work/package.json" || [ ! -d "$work/node_modules/playwright-core" ]; then
  cp "$here/package.json" "$work/package.json"
  (cd "$work" && npm install --no-audit --no-fund --no-package-lock --loglevel=error)
fi
cp "$here/report_page.mjs" "$work/report_page.mjs"

for scenario in faults paper; do
  dir="$work/$scenario" sim="$work/$scenario"
  # `faults` made once for the tests that use it: CTest's fixture scenario_faults (PRISM_FAULTS_SIM).
  [ "$scenario" = faults ] && sim=${PRISM_FAULTS_SIM:-$sim}
  mkdir -p "$dir"
  if [ ! -f "$sim/flows.ipfix" ]; then
    "$bin" simulate --scenario "$scenario" --seed 1 --out "$sim" >/dev/null
  fi
  start=$(date +%s%N)
  "$bin" analyze "$sim/flows.ipfix" --topology "$sim/topology.csv" --threads 4 \
    --html "$dir/report.html" >"$dir/summary.txt" || [ $? -eq 1 ]
  echo "$scenario: analyze --html took $(( ($(date +%s%N) - start) / 1000000 )) ms," \
       "$(stat -c %s "$dir/report.html") bytes"
  expect=()
  [ "$scenario" = faults ] && expect=(--expect-finding straggler_gpu)
  (cd "$work" && node report_page.mjs "$dir/report.html" "$artifacts/$scenario.png" \
     --max-render-ms 10000 "${expect[@]}")
done

# Counters mode: no per-GPU timelines; the findings are shown on each job's traffic plot.
excerpt="$here/../counters/zhejiang_excerpt"
"$bin" analyze "$excerpt/counters.csv.zst" --topology "$excerpt/topology_ports.csv" \
  --html "$work/counters-real.html" >"$work/counters-real.txt" || [ $? -eq 1 ]
(cd "$work" && node report_page.mjs "$work/counters-real.html" "$artifacts/counters-real.png" \
   --max-render-ms 10000 --counters)
ops="$work/counters-ops"
if [ ! -f "$ops/counters.csv" ]; then
  "$bin" simulate --scenario counters-ops --seed 1 --emit counters --poll 1 --refresh 1 \
    --out "$ops" >/dev/null
fi
"$bin" analyze "$ops/counters.csv" --topology "$ops/topology_ports.csv" \
  --html "$ops/report.html" >"$ops/summary.txt" || [ $? -eq 1 ]
(cd "$work" && node report_page.mjs "$ops/report.html" "$artifacts/counters-ops.png" \
   --max-render-ms 10000 --counters)
