#!/usr/bin/env bash
# By hand (too long for CI): a large simulated cluster replayed over loopback UDP into `serve`
# with its default flags, at real time (the scenario's records over its duration, per second),
# LOOPS times in a row (each loop later in time: LOOPS minutes of traffic, LOOPS windows).
# Asserts no record lost (any reason) and a job count equal to analyze's on one loop; prints the
# figures for docs/api.md: records offered / accepted / dropped, windows analysed, analysis time
# per window, serve's peak RSS (VmHWM) and the RSS sampled every 2 s.
# Usage: soak_scale.sh LLMPRISM WORKDIR [SCENARIO=scale-10k] [LOOPS=3] [RATE=real time]
set -euo pipefail
bin=$1 work=$2 scenario=${3:-scale-10k} loops=${4:-3} rate=${5:-}
py=/usr/bin/python3
mkdir -p "$work"
run=$work/run-$scenario
rm -rf "$run" && mkdir -p "$run"
. "$(dirname "$0")/serve_ready.sh"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

data=$work/$scenario
[ -f "$data/flows.ipfix" ] || "$bin" simulate --scenario "$scenario" --seed 1 --out "$data" >/dev/null
"$bin" analyze "$data/flows.ipfix" --topology "$data/topology.csv" --report "$run/analyze.json" \
  >/dev/null
if [ -z "$rate" ]; then
  rate=$($py -c '
import json, sys
r = json.load(open(sys.argv[1]))
n = sum(s["records"] for s in r["sources"])
span = (r["window"]["end_ns"] - r["window"]["start_ns"]) / 1e9
print(int(n / min(span, 60.0)))' "$run/analyze.json")
fi
echo "replaying $scenario $loops times at $rate records/s"

"$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --topology "$data/topology.csv" \
  --ready-file "$run/ready.json" 2>"$run/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
wait_serve_ready "$run/ready.json" "$run/serve.log"
api() { curl -sf "http://127.0.0.1:$SERVE_HTTP$1"; }
(while kill -0 "$serve_pid" 2>/dev/null; do
   echo "$(date +%s) $(awk '/VmRSS/ {print $2}' "/proc/$serve_pid/status" 2>/dev/null)"
   sleep 2
 done) >"$run/rss.txt" &
pids+=($!)
t0=$(date +%s.%N)
"$bin" replay "$data/flows.ipfix" --to "127.0.0.1:$SERVE_UDP" --rate "$rate" --loop "$loops" \
  >"$run/replay.txt"
t_replay=$(date +%s.%N)
cat "$run/replay.txt"
last=-1 same=0
for _ in $(seq 1200); do
  read -r n busy < <(api /api/v1/health | $py -c '
import json, sys
h = json.load(sys.stdin)
print(h["windows_analysed"], 0 if h["analysing"] is None else 1)')
  if [ "$n" -ge 1 ] && [ "$busy" = 0 ] && [ "$n" = "$last" ]; then same=$((same + 1)); else same=0; fi
  last=$n
  [ $same -ge 16 ] && break
  sleep 0.5
done
t_settled=$(date +%s.%N)
api /api/v1/health >"$run/health.json"
api /api/v1/ingest >"$run/ingest.json"
api /api/v1/jobs >"$run/jobs.json"
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$serve_pid/status")
kill -TERM "$serve_pid"; wait "$serve_pid" || true
grep "analysed in" "$run/serve.log" | sed 's/.*: \([0-9]*\) records.*analysed in \([0-9.]*\) s.*/\1 \2/' \
  >"$run/windows.txt"
$py - "$run" "$hwm" "$t0" "$t_replay" "$t_settled" <<'PY'
import json, re, sys
run, hwm = sys.argv[1], int(sys.argv[2])
t0, t_rep, t_set = map(float, sys.argv[3:6])
h = json.load(open(f"{run}/health.json"))
src = json.load(open(f"{run}/ingest.json"))["sources"][0]
jobs = json.load(open(f"{run}/jobs.json"))["jobs"]
a_jobs = json.load(open(f"{run}/analyze.json"))["jobs"]
sent = int(re.search(r"(\d+) records in", open(f"{run}/replay.txt").read()).group(1))
rss = [int(l.split()[1]) for l in open(f"{run}/rss.txt") if len(l.split()) == 2]
wins = [tuple(map(float, l.split())) for l in open(f"{run}/windows.txt") if l.strip()]
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok
check(src["accepted"] == sent and h["loss"]["total"] == 0,
      f"offered {sent:,}, accepted {src['accepted']:,}, dropped {h['loss']['total']} {h['loss']['records']}")
check(h["status"] == "ok", f"health {h['status']} {h['reasons']}")
active = [j for j in jobs if j["state"] == "active"]
check(len(active) == len(a_jobs), f"{len(active)} active jobs (analyze: {len(a_jobs)})")
print(f"figures: windows analysed {h['windows_analysed']} (records per window "
      f"{', '.join(f'{int(n):,}' for n, _ in wins)}; analysis {', '.join(f'{s:.1f}' for _, s in wins)} s); "
      f"serve peak RSS {hwm / 1024:.0f} MB, sampled RSS max {max(rss, default=0) / 1024:.0f} MB; "
      f"memory limit {h['memory']['limit_bytes'] / 1e6:.0f} MB; replay {t_rep - t0:.0f} s, "
      f"settled {t_set - t_rep:.0f} s after")
sys.exit(1 if fails else 0)
PY
