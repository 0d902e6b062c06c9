#!/usr/bin/env bash
# Soak: the demo's own `faults` cluster (2,880 GPUs, five jobs, a straggler GPU, a degraded spine,
# a congested link; 7.35 M records in 60 s) replayed over loopback UDP into `serve` with its
# default flags (window, step, reorder, queues and memory budget: none given), at RATE records/s
# (default 300,000, 2.5x real time). Asserts:
#   - nothing lost: every record sent is decoded and placed in a window; no drop of any reason
#     (socket, collector queue, record queue, late, implausible time, memory, skipped windows);
#     /api/v1/health "ok"; no window cut short or failed;
#   - serve reports what `analyze` reports on the same file: the straggler (straggler_gpu naming
#     10.0.210.6) and the degraded spine (degraded_switch naming spine03), each at warning or
#     above in both (the congested link and the rest are printed, not asserted);
#   - figures printed: records offered / accepted / dropped, serve's peak RSS (VmHWM), wall times;
#   - kill -9 in the middle of a window's analysis (a second serve on a fresh database, the
#     straggler's job replayed, killed while /api/v1/health shows a window in analysis after one
#     was committed): after a restart every finding served before the kill is served.
# Usage: soak_faults.sh LLMPRISM WORKDIR [RATE]
set -euo pipefail
bin=$1 work=$2 rate=${3:-300000}
py=/usr/bin/python3
mkdir -p "$work"
run=$work/run
rm -rf "$run" && mkdir -p "$run"
. "$(dirname "$0")/serve_ready.sh"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

t0=$(date +%s.%N)
# The simulated `faults` scenario: CTest's fixture scenario_faults makes it once for the tests that
# replay it (PRISM_FAULTS_SIM); run alone, this test simulates it into its work directory.
faults=${PRISM_FAULTS_SIM:-$work/faults}
if [ ! -f "$faults/flows.ipfix" ]; then
  "$bin" simulate --scenario faults --seed 1 --out "$faults" >/dev/null
fi
t_sim=$(date +%s.%N)
"$bin" analyze "$faults/flows.ipfix" --topology "$faults/topology.csv" \
  --report "$run/analyze.json" >/dev/null
t_analyze=$(date +%s.%N)

"$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --topology "$faults/topology.csv" \
  --db "$run/state.sqlite" --ready-file "$run/ready.json" 2>"$run/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
wait_serve_ready "$run/ready.json" "$run/serve.log"
api() { curl -sf "http://127.0.0.1:$SERVE_HTTP$1"; }

"$bin" replay "$faults/flows.ipfix" --to "127.0.0.1:$SERVE_UDP" --rate "$rate" \
  >"$run/replay.txt"
t_replay=$(date +%s.%N)
cat "$run/replay.txt"

# Settled: nothing in analysis, at least one window, and the idle flush has analysed the tail (or,
# failing that sign, no window taken for 12 s, longer than the default idle flush); bounded: 400 s.
$py "$(dirname "$0")/serve_settled.py" "$SERVE_HTTP" --min-windows 1 --quiet-s 12 --timeout 400 ||
  { tail -20 "$run/serve.log"; echo "FAIL serve did not settle"; exit 1; }
t_settled=$(date +%s.%N)
api /api/v1/health >"$run/health.json"
api /api/v1/ingest >"$run/ingest.json"
api "/api/v1/findings?limit=100000" >"$run/findings.json"
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$serve_pid/status")
kill -TERM "$serve_pid"
wait "$serve_pid" || { echo "FAIL serve exit code after SIGTERM"; exit 1; }

$py - "$run" "$hwm" "$t0" "$t_sim" "$t_analyze" "$t_replay" "$t_settled" <<'PY'
import json, re, sys
run, hwm_kb = sys.argv[1], int(sys.argv[2])
t0, t_sim, t_an, t_rep, t_set = map(float, sys.argv[3:8])
health = json.load(open(f"{run}/health.json"))
ingest = json.load(open(f"{run}/ingest.json"))
served = json.load(open(f"{run}/findings.json"))["findings"]
analyzed = json.load(open(f"{run}/analyze.json"))["findings"]
sent = int(re.search(r"(\d+) records in", open(f"{run}/replay.txt").read()).group(1))
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok

src = ingest["sources"][0]
loss = health["loss"]
check(src["records"] == sent, f"records offered {sent:,}, decoded {src['records']:,}")
check(src["accepted"] == sent, f"records accepted into windows {src['accepted']:,}")
check(loss["total"] == 0, f"records dropped 0: {loss['total']} ({loss['records']}, "
      f"socket datagrams {loss['socket_datagrams']}, collector queue {loss['collector_queue_datagrams']})")
check(health["status"] == "ok", f"/api/v1/health status {health['status']} {health['reasons']}")
check(health["memory"]["windows_shortened"] == 0 and health["windows_failed"] == 0,
      f"windows cut short {health['memory']['windows_shortened']}, failed {health['windows_failed']}")
rank = {"info": 0, "warning": 1, "critical": 2}
def best(findings, kind, gpu=None, switch=None):
    hits = [f for f in findings if f["kind"] == kind
            and (gpu is None or gpu in f["gpus"]) and (switch is None or switch in f["switches"])]
    return max((rank[f["severity"]] for f in hits), default=-1), len(hits)
names = {-1: "absent", 0: "info", 1: "warning", 2: "critical"}
for what, kind, gpu, switch in [("straggler", "straggler_gpu", "10.0.210.6", None),
                                ("degraded spine", "degraded_switch", None, "spine03")]:
    a, na = best(analyzed, kind, gpu, switch)
    s, ns = best(served, kind, gpu, switch)
    check(a >= 1 and s >= 1, f"{what} ({kind} {gpu or switch}): analyze {names[a]}, serve {names[s]} "
          f"({ns} merged findings)")
for f in analyzed:
    if rank[f["severity"]] < 1 or f["kind"] in ("straggler_gpu", "degraded_switch"):
        continue
    s, _ = best(served, f["kind"], f["gpus"][0] if f["gpus"] else None,
                f["switches"][0] if f["switches"] else None)
    print(f"info {f['kind']} {f['gpus'][:1] or f['switches']}: analyze {f['severity']}, serve {names[s]}")
print(f"figures: offered {sent:,} records at the replay's rate, accepted {src['accepted']:,}, "
      f"dropped {loss['total']}; windows analysed {health['windows_analysed']}; serve peak RSS "
      f"{hwm_kb / 1024:.0f} MB (memory limit {health['memory']['limit_bytes'] / 1e6:.0f} MB); "
      f"simulate {t_sim - t0:.1f} s, analyze {t_an - t_sim:.1f} s, replay {t_rep - t_an:.1f} s, "
      f"settled {t_set - t_rep:.1f} s after")
sys.exit(1 if fails else 0)
PY

# --- kill -9 mid-window --------------------------------------------------------------------------
start_kill_serve() {
  rm -f "$run/ready2.json"
  "$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --window 20 --step 5 \
    --topology "$faults/topology.csv" --db "$run/kill.sqlite" --ready-file "$run/ready2.json" \
    2>"$run/serve-kill-$1.log" &
  serve_pid=$!
  pids+=("$serve_pid")
  wait_serve_ready "$run/ready2.json" "$run/serve-kill-$1.log"
}
start_kill_serve a
"$bin" replay "$faults/flows.ipfix" --to "127.0.0.1:$SERVE_UDP" --cidr 10.0.192.0/18 \
  --rate "$rate" >/dev/null &
replay_pid=$!
pids+=("$replay_pid")
caught=0
for _ in $(seq 1200); do
  if api /api/v1/health | $py -c '
import json, sys
h = json.load(sys.stdin)
sys.exit(0 if h["windows_analysed"] >= 1 and h["analysing"] is not None else 1)'; then
    api "/api/v1/findings?limit=100000" >"$run/kill-before.json"
    # Still in the same window's analysis after the findings were read: the kill is mid-window.
    if api /api/v1/health | $py -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["analysing"] else 1)'; then
      kill -9 "$serve_pid"
      caught=1
      break
    fi
  fi
  sleep 0.05
done
wait "$serve_pid" 2>/dev/null || true
kill "$replay_pid" 2>/dev/null || true
wait "$replay_pid" 2>/dev/null || true
[ $caught = 1 ] || { echo "FAIL no window was seen in analysis"; exit 1; }
start_kill_serve b
api "/api/v1/findings?limit=100000" >"$run/kill-after.json"
kill -TERM "$serve_pid"; wait "$serve_pid" || true
$py - "$run" <<'PY'
import json, sys
run = sys.argv[1]
ids = lambda n: {f["id"]: f for f in json.load(open(f"{run}/{n}.json"))["findings"]}
before, after = ids("kill-before"), ids("kill-after")
missing = [i for i in before if i not in after]
ok = len(before) > 0 and not missing
print(("ok   " if ok else "FAIL ") + f"kill -9 mid-window: {len(before)} findings served before the kill, "
      f"{len(missing)} missing after the restart ({len(after)} served)")
sys.exit(0 if ok else 1)
PY
echo "soak_faults: all checks passed"
