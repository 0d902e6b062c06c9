#!/usr/bin/env bash
# serve's roles apart give serve's answer (docs/scale-out.md): the `slow-steps` scenario (64 GPUs,
# a straggler GPU from 18 s) dropped into one `serve --watch` (the reference), and the same file
# dropped into `serve --role collector --watch`, published to a real nats-server and analysed by
# `serve --role analyser`. Three analysers, each with its own database:
#   A  reads the stream undisturbed;
#   B  is killed with kill -9 after its first windows are committed, while the collector still
#      has the second half of the records to publish, and restarted on its database;
#   C  is stopped with SIGTERM at the same point (an upgrade) and restarted.
# The nats-server is also killed with kill -9 and restarted on its store while the second half is
# published and read. Every analyser must end with the reference's findings (kind, severity, job,
# GPUs, switches, start/end, windows), jobs (layout, windows analysed, step series) and no record
# lost; the restarted ones must say they resumed and skipped what committed windows held.
# Usage: roles.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")/../service" && pwd)
. "$here/serve_harness.sh"
. "$(dirname "$0")/nats_server.sh"
# Every server this test started is killed however it exits (pids: serve_harness.sh).
trap 'nats_stop; cleanup' EXIT
window=20 step=5 reorder=2
# No idle flush before the second half comes (it would analyse windows without it): the restarts
# below take a few seconds.
idle=10

"$bin" simulate --scenario slow-steps --seed 1 --out "$work/sim" >/dev/null
# Two parts by start time: the second is published after the analysers' first windows.
$py - "$work/sim/flows.csv" "$work" <<'PY'
import csv, sys
src, work = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(src, newline="")))
fields = list(rows[0].keys())
t0 = min(int(r["start_ns"]) for r in rows)
# Records of the first 27 s: the windows ending at 20 and 25 s are due (reorder 2 s) before the
# second half comes.
cut = t0 + 27 * 10**9
for name, part in (("part1", [r for r in rows if int(r["start_ns"]) < cut]),
                   ("part2", [r for r in rows if int(r["start_ns"]) >= cut])):
    with open(f"{work}/{name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(part)
print(f"{len(rows)} records, cut at +27 s")
PY

# drop DIR FILE: a file appears whole in a watched directory.
drop() { cp "$2" "$1/.$(basename "$2")" && mv "$1/.$(basename "$2")" "$1/$(basename "$2")"; }
# health PORT KEY: one field of /api/v1/health.
health() {
  curl -sf "http://127.0.0.1:$1/api/v1/health" | $py -c "import json,sys; print(json.load(sys.stdin)$2)"
}
# settle PORT: waits (at most 90 s) until no window has come for idle + 2 s with nothing in
# analysis: the last windows come with the idle flush.
settle() {
  local last=-1 same=0 n
  for _ in $(seq 900); do
    n=$(health "$1" '["windows_analysed"]' 2>/dev/null || echo -1)
    if [ "$n" = "$last" ] && [ "$(health "$1" '["analysing"]')" = "None" ]; then
      same=$((same + 1)); [ $same -ge $(( (idle + 2) * 10 )) ] && return 0
    else
      same=0; last=$n
    fi
    sleep 0.1
  done
  echo "FAIL windows did not settle on port $1"; return 1
}
# state PORT OUT: findings and jobs (with their step series) as JSON.
state() {
  $py - "$1" "$2" <<'PY'
import json, sys, urllib.request
port, out = sys.argv[1], sys.argv[2]
get = lambda p: json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}{p}"))
jobs = {j["id"]: get(f"/api/v1/jobs/{j['id']}") for j in get("/api/v1/jobs")["jobs"]}
json.dump({"findings": get("/api/v1/findings")["findings"], "jobs": jobs,
           "ingest": get("/api/v1/ingest")}, open(out, "w"), indent=1, sort_keys=True)
PY
}

# The reference: one process.
mkdir -p "$work/ref-watch"
common=(--http 127.0.0.1:0 --window $window --step $step --reorder $reorder --idle-flush $idle
        --topology "$work/sim/topology.csv")
start_serve "$work/ref.log" --watch "$work/ref-watch" --db "$work/ref.sqlite" "${common[@]}"
ref_port=$SERVE_HTTP
ref_pid=${pids[-1]}
drop "$work/ref-watch" "$work/part1.csv"
sleep 1.5
drop "$work/ref-watch" "$work/part2.csv"
settle $ref_port
state $ref_port "$work/ref.json"
kill -TERM "$ref_pid" && wait "$ref_pid"

# The stream, a collector, three analysers.
nats_start "$work"
mkdir -p "$work/col-watch"
start_serve "$work/collector.log" --role collector --nats "$NATS_URL" --nats-subject records.c1 \
  --watch "$work/col-watch" --http 127.0.0.1:0 --nats-batch 500
col_port=$SERVE_HTTP
declare -A port pid
for a in A B C; do
  start_serve "$work/$a.log" --role analyser --nats "$NATS_URL" --db "$work/$a.sqlite" \
    "${common[@]}"
  port[$a]=$SERVE_HTTP pid[$a]=${pids[-1]}
done
drop "$work/col-watch" "$work/part1.csv"
# B and C: wait for their first committed windows, then kill -9 B and SIGTERM C.
for a in B C; do
  for _ in $(seq 300); do
    [ "$(health ${port[$a]} '["windows_analysed"]')" -ge 1 ] && break
    sleep 0.1
  done
done
kill -9 "${pid[B]}"
kill -TERM "${pid[C]}"
wait "${pid[C]}" || { echo "FAIL analyser C did not stop cleanly"; exit 1; }
# The NATS server too, with the second half to come.
kill -9 "$NATS_PID"
drop "$work/col-watch" "$work/part2.csv"
sleep 1
nats_start "$work"
for a in B C; do
  start_serve "$work/$a-2.log" --role analyser --nats "$NATS_URL" --db "$work/$a.sqlite" \
    "${common[@]}"
  port[$a]=$SERVE_HTTP pid[$a]=${pids[-1]}
done
settling=()
for a in A B C; do settle ${port[$a]} & settling+=($!); done
for p in "${settling[@]}"; do wait "$p"; done
for a in A B C; do state ${port[$a]} "$work/$a.json"; done
curl -sf "http://127.0.0.1:$col_port/api/v1/ingest" >"$work/collector.json"
curl -sf "http://127.0.0.1:${port[B]}/metrics" >"$work/B.metrics"

$py - "$work" <<'PY'
import json, sys
work = sys.argv[1]
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok

def essence(state):
    fs = sorted((f["kind"], f["severity"], f["job"], tuple(f["gpus"]), tuple(f["switches"]),
                 f["start_ns"], f["end_ns"], f["first_window_end_ns"], f["last_window_end_ns"],
                 f["windows"]) for f in state["findings"])
    jobs = {i: (j["layout"], j["windows"], j["step_series"]["rows"], j["gpus"])
            for i, j in state["jobs"].items()}
    return fs, jobs

ref = json.load(open(f"{work}/ref.json"))
rf, rj = essence(ref)
check(len(rj) == 1 and any(f[0] == "slow_step" for f in rf),
      f"reference: {len(rj)} job, {len(rf)} findings, the slow steps among them")
check(ref["ingest"]["records_lost"] and sum(ref["ingest"]["records_lost"].values()) == 0,
      "reference lost no record")
col = json.load(open(f"{work}/collector.json"))
check(col["stream"]["published_records"] == 4832 and col["stream"]["held_records"] == 0,
      f"collector published {col['stream']['published_records']} records of 4832, "
      f"{col['stream']['publish_errors']} publish errors retried")
for a in "ABC":
    s = json.load(open(f"{work}/{a}.json"))
    f, j = essence(s)
    check(f == rf, f"analyser {a}: the reference's {len(rf)} findings ({len(f)})")
    check(j == rj, f"analyser {a}: the reference's jobs, windows and step series")
    lost = sum(s["ingest"]["records_lost"].values())
    check(lost == 0, f"analyser {a}: no record lost ({s['ingest']['records_lost']})")
    if a != "A":
        log = open(f"{work}/{a}-2.log").read()
        check("windows up to" in log, f"analyser {a} resumed after its committed windows")
        check(s["ingest"]["stream"]["records_already_analysed"] > 0,
              f"analyser {a}: {s['ingest']['stream']['records_already_analysed']} records read "
              "again were skipped as already analysed")
metrics = open(f"{work}/B.metrics").read()
check("llmprism_stream_lag_messages 0" in metrics, "analyser B's /metrics: lag 0 at the end")
sys.exit(1 if fails else 0)
PY
echo "roles: all checks passed"
