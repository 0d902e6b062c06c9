#!/usr/bin/env bash
# `llmprism serve` end to end on loopback, with real parts:
#  1. the `faults` scenario's job with the straggler (job2 of the simulation, 512 GPUs,
#     10.0.192.0/18) is replayed as IPFIX datagrams over UDP (`llmprism replay`) into serve
#     (--window 20 --step 5, bearer token); the API must show the job with its layout and a
#     straggler_gpu finding naming the injected GPU, first reported within two windows of the
#     fault's start;
#  2. a real Prometheus (scrape_interval 1s, bearer token) scrapes /metrics; its query API must
#     return llmprism_job_step_seconds for the job and llmprism_findings_total for the straggler,
#     and llmprism_switch_dp_bandwidth_ratio for every switch of the job, lowest for the degraded
#     spine03;
#  3. restart: SIGTERM (clean flush), start again on the same database: every finding served
#     before is served after, identically; then kill -9 and start again: the same holds.
# Usage: serve_e2e.sh LLMPRISM WORKDIR        (exit 77 = prometheus missing: skipped)
set -euo pipefail
bin=$1 work=$2
command -v prometheus >/dev/null || { echo "prometheus missing: run scripts/setup.sh" >&2; exit 77; }
mkdir -p "$work"
rm -rf "$work/run" && mkdir -p "$work/run"
run=$work/run
py=/usr/bin/python3
. "$(dirname "$0")/serve_ready.sh"
token=e2e-secret-token
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# The simulated `faults` scenario: CTest's fixture scenario_faults makes it once for the tests that
# replay it (PRISM_FAULTS_SIM); run alone, this test simulates it into its work directory.
faults=${PRISM_FAULTS_SIM:-$work/faults}
if [ ! -f "$faults/flows.ipfix" ]; then
  "$bin" simulate --scenario faults --seed 1 --out "$faults" >/dev/null
fi

start_serve() {  # start_serve TAG: starts serve, waits for its ready file, sets HTTP / UDP / SERVE_PID
  rm -f "$run/ready.json"
  "$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --window 20 --step 5 --idle-flush 3 \
    --reorder 2 --db "$run/state.sqlite" --topology "$faults/topology.csv" --token "$token" \
    --ready-file "$run/ready.json" 2>"$run/serve-$1.log" &
  SERVE_PID=$!
  pids+=("$SERVE_PID")
  wait_serve_ready "$run/ready.json" "$run/serve-$1.log"
  HTTP=$SERVE_HTTP UDP=$SERVE_UDP
}

api() { curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$HTTP$1"; }

# Waits (bounded) until at least $1 windows were analysed and the idle flush has analysed the
# tail (or, failing that sign, none more came for 4 s): the served state is then final.
wait_quiet() {
  $py "$(dirname "$0")/serve_settled.py" "$HTTP" --token "$token" --min-windows "$1" \
    --quiet-s 4 --timeout 180 || exit 1
}

# --- 1. replay the faulty job into serve --------------------------------------------------------
start_serve first
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP/api/v1/jobs")
[ "$code" = 401 ] && echo "ok   API without the token: 401" || { echo "FAIL API without token: $code"; exit 1; }

prom_port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$run/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: llmprism
    authorization:
      credentials: $token
    static_configs:
      - targets: ['127.0.0.1:$HTTP']
YML
prometheus --config.file="$run/prometheus.yml" --storage.tsdb.path="$run/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$run/prometheus.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$prom_port/-/ready" >/dev/null 2>&1 && break; sleep 0.2; done

"$bin" replay "$faults/flows.ipfix" --to "127.0.0.1:$UDP" --cidr 10.0.192.0/18 --rate 200000

wait_quiet 6
api /api/v1/jobs >"$run/jobs.json"
api "/api/v1/findings?kind=straggler_gpu" >"$run/stragglers.json"
api /api/v1/ingest >"$run/ingest.json"
$py - "$run" <<'PY'
import json, sys
run = sys.argv[1]
jobs = json.load(open(f"{run}/jobs.json"))["jobs"]
st = json.load(open(f"{run}/stragglers.json"))["findings"]
ing = json.load(open(f"{run}/ingest.json"))
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok
check(len(jobs) == 1 and jobs[0]["gpus"] == 512, f"one job of 512 GPUs: {[(j['id'], j['gpus']) for j in jobs]}")
lay = jobs[0]["layout"] if jobs else {}
check((lay.get("dp"), lay.get("pp"), lay.get("tp")) == (32, 4, 4), f"layout DP x PP x TP = 32 x 4 x 4: {lay}")
hit = [f for f in st if "10.0.210.6" in f["gpus"]]
check(bool(hit), f"straggler_gpu finding names the injected GPU 10.0.210.6 ({len(st)} straggler findings)")
fault_start, window = 1700000015 * 10**9, 20 * 10**9
if hit:
    first = min(f["first_window_end_ns"] for f in hit)
    check(first <= fault_start + 2 * window, f"first reported by the window ending {(first - fault_start) / 1e9:+.0f} s after the fault's start (limit +40 s)")
    check(all(f["job"] == jobs[0]["id"] for f in hit), "finding carries the job's id")
src = ing["sources"][0]
lost = src["dropped"]["queue_full"] + src["dropped"]["late"] + src["dropped"]["buffer_full"] + src["socket_drops"]
check(src["records"] > 1_000_000, f"{src['records']} records ingested over UDP, {lost} lost")
sys.exit(1 if fails else 0)
PY

# --- 2. Prometheus ----------------------------------------------------------------------------
prom_query() { curl -sG "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1"; }
ok=0
for _ in $(seq 40); do
  a=$(prom_query 'llmprism_job_step_seconds' | $py -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(len(r), r[0]["value"][1] if r else "")')
  b=$(prom_query 'llmprism_findings_total{kind="straggler_gpu"}' | $py -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(sum(float(x["value"][1]) for x in r))')
  if [ "${a%% *}" -ge 1 ] && [ "${b%.*}" -ge 1 ]; then ok=1; break; fi
  sleep 0.5
done
[ $ok = 1 ] && echo "ok   Prometheus: llmprism_job_step_seconds = ${a#* } s, straggler findings = $b" \
  || { echo "FAIL Prometheus query: step='$a' findings='$b'"; cat "$run/prometheus.log" | tail -5; exit 1; }
# Per-switch DP bandwidth gauges: every switch that carried the job's DP traffic (8 spines and the
# 32 leaves of pods 12-15), and over the run the degraded spine03 (bandwidth / 4 from 20 s to 50 s)
# had the lowest ratio of the spines, below 0.5.
n_sw=$(prom_query 'count(llmprism_switch_dp_bandwidth_ratio)' | $py -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
[ "$n_sw" = 40 ] && echo "ok   llmprism_switch_dp_bandwidth_ratio for all 40 switches of the job" \
  || { echo "FAIL llmprism_switch_dp_bandwidth_ratio for $n_sw switches, expected 40"; exit 1; }
prom_query 'min by (switch) (min_over_time(llmprism_switch_dp_bandwidth_ratio{switch=~"spine.*"}[10m]))' \
  | $py -c '
import json, sys
r = {x["metric"]["switch"]: float(x["value"][1]) for x in json.load(sys.stdin)["data"]["result"]}
low = min(r, key=r.get) if r else None
ok = len(r) == 8 and low == "spine03" and r["spine03"] < 0.5
print(("ok   " if ok else "FAIL ") + "lowest DP bandwidth ratio over the run: " +
      ", ".join(f"{k} {v:.2f}" for k, v in sorted(r.items())))
sys.exit(0 if ok else 1)'
up=$(prom_query 'up{job="llmprism"}' | $py -c 'import json,sys; print(json.load(sys.stdin)["data"]["result"][0]["value"][1])')
[ "$up" = 1 ] && echo "ok   Prometheus scrape up == 1 (bearer token)" || { echo "FAIL up=$up"; exit 1; }

# --- 3. restart keeps every finding -----------------------------------------------------------
api "/api/v1/findings?limit=100000" >"$run/findings-before.json"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" && echo "ok   SIGTERM: exit 0" || { echo "FAIL serve exit code after SIGTERM"; exit 1; }
grep -q "stopped" "$run/serve-first.log"
start_serve second
api "/api/v1/findings?limit=100000" >"$run/findings-after.json"
# More traffic after the restart (a second copy of the job, later in time), then kill -9.
"$bin" replay "$faults/flows.ipfix" --to "127.0.0.1:$UDP" --cidr 10.0.192.0/18 --rate 200000 \
  --loop 1 >/dev/null
wait_quiet 3
api "/api/v1/findings?limit=100000" >"$run/findings-before-kill.json"
kill -KILL "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
start_serve third
api "/api/v1/findings?limit=100000" >"$run/findings-after-kill.json"
$py - "$run" <<'PY'
import json, sys
run = sys.argv[1]
load = lambda n: {f["id"]: f for f in json.load(open(f"{run}/{n}.json"))["findings"]}
before, after = load("findings-before"), load("findings-after")
bk, ak = load("findings-before-kill"), load("findings-after-kill")
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok
check(len(before) > 0 and before == after, f"SIGTERM restart: {len(after)} of {len(before)} findings served identically")
missing = [i for i in bk if i not in ak]
check(not missing, f"kill -9 restart: {len(bk)} findings served before the kill, {len(missing)} missing after")
sys.exit(1 if fails else 0)
PY
kill -TERM "$SERVE_PID"; wait "$SERVE_PID"
echo "serve_e2e: all checks passed"
