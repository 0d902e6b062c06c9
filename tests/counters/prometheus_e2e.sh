#!/usr/bin/env bash
# Counters mode against a real Prometheus: simulated port counters are backfilled into a TSDB with
# promtool, served by prometheus on a free 127.0.0.1 port, read back through the HTTP API by
# `llmprism analyze --prometheus`, and must give the same jobs, periods, iterations and findings as
# the CSV path. Usage: prometheus_e2e.sh LLMPRISM WORKDIR
set -euo pipefail
llmprism=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
for tool in prometheus promtool; do
  command -v $tool >/dev/null || { echo "SKIP: $tool not installed (scripts/setup.sh installs it)"; exit 77; }
done
rm -rf "$work" && mkdir -p "$work"
"$llmprism" simulate --scenario counters --emit counters --poll 1 --refresh 1 --duration 300 \
  --out "$work/sim" >/dev/null
"$llmprism" analyze "$work/sim/counters.csv" --topology "$work/sim/topology_ports.csv" \
  --report "$work/csv.json" >/dev/null

/usr/bin/python3 "$here/to_openmetrics.py" "$work/sim/counters.csv" "$work/counters.om"
promtool tsdb create-blocks-from openmetrics "$work/counters.om" "$work/tsdb" >/dev/null

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'global:\n  scrape_interval: 1h\nscrape_configs: []\n' >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" \
  >"$work/prometheus.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null || { cat "$work/prometheus.log"; exit 1; }

read -r start end < <(/usr/bin/python3 -c "
import csv
ts=[int(r['ts_ms']) for r in csv.DictReader(open('$work/sim/counters.csv'))]
print(f'{min(ts)/1000:.3f} {max(ts)/1000:.3f}')")
"$llmprism" analyze --prometheus "http://127.0.0.1:$port" --prom-in-metric port_in_bytes_total \
  --prom-out-metric port_out_bytes_total --prom-start "$start" --prom-end "$end" \
  --topology "$work/sim/topology_ports.csv" --report "$work/prom.json" >"$work/prom.txt"

/usr/bin/python3 - "$work/csv.json" "$work/prom.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["mode"] == b["mode"] == "counters", (a["mode"], b["mode"])
assert len(a["jobs"]) == 3, f"expected 3 jobs, got {len(a['jobs'])}"
for key in ("jobs", "findings"):
    assert a[key] == b[key], f"{key} differ:\n{a[key]}\n{b[key]}"
ca, cb = a["counters"], b["counters"]
for key in ("jobs", "servers", "polls", "bytes", "ports"):
    assert ca[key] == cb[key], f"counters.{key} differ"
print(f"prometheus path == csv path: {len(a['jobs'])} jobs, {len(a['findings'])} findings, "
      f"{ca['polls']} polls, periods {[round(j['period_s'], 3) for j in ca['jobs']]}")
PY
