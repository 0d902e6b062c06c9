#!/usr/bin/env bash
# The live dashboard of `llmprism serve` in headless chromium (playwright-core, as tests/browser):
# `tiny` is replayed over UDP in real time-ish (5x) so snapshots keep coming while the page is open;
# the page must render the report views, re-render on a new snapshot without reloading, and log
# no console errors; its header counts the window's records. One datagram of records stamped 0
# (1970, exported now: implausible) is sent too: the page must show the degraded banner naming the
# lost records. Screenshot: ARTIFACTS/dashboard.png.
#   dashboard_browser.sh LLMPRISM WORKDIR ARTIFACTS
set -euo pipefail
bin=$1 work=$2 artifacts=$3
here=$(cd "$(dirname "$0")" && pwd)
browser_dir=$(cd "$here/../browser" && pwd)
mkdir -p "$work" "$artifacts"
command -v node >/dev/null || { echo "node is missing: run scripts/setup.sh" >&2; exit 1; }
if ! cmp -s "$browser_dir/package.json" "$work/package.json" || [ ! -d "$work/node_modules/playwright-core" ]; then
  cp "$browser_dir/package.json" "$work/package.json"
  (cd "$work" && npm install --no-audit --no-fund --no-package-lock --loglevel=error)
fi
cp "$here/dashboard_page.mjs" "$work/dashboard_page.mjs"
[ -f "$work/tiny/flows.ipfix" ] || "$bin" simulate --scenario tiny --seed 1 --out "$work/tiny" >/dev/null
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
rm -f "$work/ready.json"
token=dash-token
"$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --window 10 --step 2 --reorder 1 \
  --topology "$work/tiny/topology.csv" --token "$token" --ready-file "$work/ready.json" \
  2>"$work/serve.log" &
pids+=($!)
. "$here/serve_ready.sh"
wait_serve_ready "$work/ready.json" "$work/serve.log"
http=$SERVE_HTTP udp=$SERVE_UDP
# tiny: ~30 s of traffic; 3 loops at a pace of ~6x real time keep windows coming for ~15 s.
"$bin" replay "$work/tiny/flows.ipfix" --to "127.0.0.1:$udp" --rate 12000 --loop 3 >"$work/replay.log" &
pids+=($!)
PYTHONPATH=$here /usr/bin/python3 -c '
import sys, time
from ipfix_send import Sender
s = Sender(int(sys.argv[1]))
s.send([("10.9.0.1", "10.9.0.2", 0, 50, 100)] * 10, export_s=int(time.time()))' "$udp"
(cd "$work" && node dashboard_page.mjs "http://127.0.0.1:$http/" "$artifacts/dashboard.png" \
  --token "$token" --expect-alert "telemetry lost: 10 records")
