#!/usr/bin/env bash
# Browser test of the HTML report: simulates `faults` and `paper`, writes their reports
# with `analyze --html`, and loads each in headless Debian chromium through playwright-core
# (report_page.mjs): no console errors or network requests, renders within 10 s, < 10 MB, the
# timeline and the straggler finding visible, clicking the finding scrolls to and highlights its
# GPUs. Screenshots go to ARTIFACTS/{faults,faults-finding,paper}.png.
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
  dir="$work/$scenario"
  if [ ! -f "$dir/flows.ipfix" ]; then
    "$bin" simulate --scenario "$scenario" --seed 1 --out "$dir" >/dev/null
  fi
  start=$(date +%s%N)
  "$bin" analyze "$dir/flows.ipfix" --topology "$dir/topology.csv" --threads 4 \
    --html "$dir/report.html" >"$dir/summary.txt" || [ $? -eq 1 ]
  echo "$scenario: analyze --html took $(( ($(date +%s%N) - start) / 1000000 )) ms," \
       "$(stat -c %s "$dir/report.html") bytes"
  expect=()
  [ "$scenario" = faults ] && expect=(--expect-finding straggler_gpu)
  (cd "$work" && node report_page.mjs "$dir/report.html" "$artifacts/$scenario.png" \
     --max-render-ms 10000 "${expect[@]}")
done
