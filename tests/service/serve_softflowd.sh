#!/usr/bin/env bash
# `llmprism serve` fed by a real exporter: softflowd meters a simulated training job
# live and exports IPFIX to serve on loopback.
#
# softflowd reading a file (-r) never expires flows by their idle time (only when its table is
# full, or at the end), so every QP would become one record for the whole capture. It expires idle
# flows only when capturing live, by the wall clock, in whole seconds. So the capture of the
# `slow-steps` scenario (64 GPUs, one 4x2x8 job with ~5 s steps, each QP idle for >= 2 s between
# messages, a straggler GPU from 14 s on) is replayed onto `lo` in real time
# (tests/service/pcap_to_wire.py: frames at their original length, a foreign destination MAC so the
# kernel drops them before IP), softflowd captures it (`-i lo`, udp timeout 1 s, -A milli) and
# exports to `serve --ipfix-udp`. The API must then show:
#   - the ingest counters: records from softflowd, none bad or lost;
#   - one job of the 64 simulated GPUs with layout DP x PP x TP = 4 x 2 x 8;
#   - its step series holds the truth's step time before the fault and during it (within 5 %);
#   - the injected fault: a slow_step finding of the job whose value is the truth's step time
#     during the fault (5 %) against a baseline of the step time before it (10 %). The straggling
#     GPU itself cannot be named from these records (docs/api.md, "Real exporters").
# Usage: serve_softflowd.sh LLMPRISM WORKDIR   (exit 77: softflowd missing or no CAP_NET_RAW)
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
. "$(dirname "$0")/serve_ready.sh"
command -v softflowd >/dev/null || { echo "softflowd missing: run scripts/setup.sh" >&2; exit 77; }
$py -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)' 2>/dev/null ||
  { echo "no CAP_NET_RAW: cannot replay onto lo" >&2; exit 77; }
rm -rf "$work" && mkdir -p "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

"$bin" simulate --scenario slow-steps --seed 1 --out "$work/sim" --emit pcap >/dev/null
rm -f "$work/sim/flows.ipfix"

"$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --window 30 --step 5 --idle-flush 4 \
  --reorder 3 --topology "$work/sim/topology.csv" --db "$work/state.sqlite" \
  --ready-file "$work/ready.json" 2>"$work/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
wait_serve_ready "$work/ready.json" "$work/serve.log"
http=$SERVE_HTTP udp=$SERVE_UDP
api() { curl -sf "http://127.0.0.1:$http$1"; }

# Only the simulated RoCE traffic (10.0.0.0/16 -> UDP 4791): not softflowd's own export, nor other
# tests' loopback traffic.
softflowd -d -i lo -n "127.0.0.1:$udp" -v 10 -A milli -t udp=1 -t general=1 -t expint=1 \
  -p "$work/softflowd.pid" -c "$work/softflowd.ctl" 'udp dst port 4791 and src net 10.0.0.0/16' \
  >"$work/softflowd.log" 2>&1 &
sf_pid=$!
pids+=("$sf_pid")
sleep 0.5
kill -0 "$sf_pid" 2>/dev/null || { cat "$work/softflowd.log"; echo "FAIL softflowd did not start"; exit 1; }

timeout 90 $py "$here/pcap_to_wire.py" "$work/sim/flows.pcap" lo --max-seconds 60 \
  >"$work/replay.json"
echo "ok   replayed onto lo: $(cat "$work/replay.json")"
sleep 2.5  # the last flows idle out (1 s timeout, checked every second)
kill -TERM "$sf_pid"; wait "$sf_pid" || true

# Bounded wait until serve has analysed the tail: its idle flush (4 s after the last record) has
# taken the last window, or, failing that, nothing changed for longer than the idle flush.
$py "$here/serve_settled.py" "$http" --min-windows 1 --quiet-s 6 --timeout 90 ||
  { echo "FAIL serve did not settle"; exit 1; }

api /api/v1/jobs >"$work/jobs.json"
job=$($py -c "import json;j=json.load(open('$work/jobs.json'))['jobs'];print(j[0]['id'] if j else 'none')")
api "/api/v1/jobs/$job" >"$work/job.json" || echo '{}' >"$work/job.json"
api "/api/v1/findings?limit=1000" >"$work/findings.json"
api /api/v1/ingest >"$work/ingest.json"
kill -TERM "$serve_pid"; wait "$serve_pid"

$py - "$work" <<'PY'
import json, statistics, sys
w = sys.argv[1]
truth = json.load(open(f"{w}/sim/truth.json"))
jobs = json.load(open(f"{w}/jobs.json"))["jobs"]
job = json.load(open(f"{w}/job.json"))
findings = json.load(open(f"{w}/findings.json"))["findings"]
ingest = json.load(open(f"{w}/ingest.json"))
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok

src = ingest["sources"][0]
lost = sum(src["dropped"].values()) + src["datagrams_dropped"] + src["socket_drops"]
check(src["records"] > 500 and src["bad"] == 0 and lost == 0,
      f"{src['records']} records from softflowd ({src['datagrams']} datagrams), "
      f"bad {src['bad']}, lost {lost}")
check(len(jobs) == 1 and jobs[0]["gpus"] == 64,
      f"one job of 64 GPUs: {[(j['id'], j['gpus']) for j in jobs]}")
lay = jobs[0]["layout"] if jobs else {}
check((lay.get("dp"), lay.get("pp"), lay.get("tp")) == (4, 2, 8),
      f"layout DP x PP x TP = 4 x 2 x 8: {lay}")

# The truth's step times (per step index, the median over the GPUs) before and during the fault.
fault = truth["faults"][0]
per_step = {}
for tl in truth["timelines"]:
    for i, st in enumerate(tl["steps"]):
        per_step.setdefault(i, []).append(st)
before, during = [], []
for sts in per_step.values():
    dur = statistics.median((x["end_ns"] - x["start_ns"]) / 1e9 for x in sts)
    if min(x["start_ns"] for x in sts) >= fault["start_ns"]:
        during.append(dur)
    elif max(x["end_ns"] for x in sts) <= fault["start_ns"]:
        before.append(dur)
t_before, t_during = statistics.median(before), statistics.median(during)
series = [r[2] for r in job.get("step_series", {}).get("rows", [])]
near = lambda v, t, tol: abs(v - t) <= tol * t
check(any(near(v, t_before, 0.05) for v in series) and any(near(v, t_during, 0.05) for v in series),
      f"step series {[round(v, 2) for v in series]} s holds the truth's step times "
      f"{t_before:.2f} s (before the fault) and {t_during:.2f} s (during it), within 5 %")

job_id = jobs[0]["id"] if jobs else None
slow = [f for f in findings if f["kind"] == "slow_step" and f["job"] == job_id]
ok = any(near(f["value"], t_during, 0.05) and near(f["baseline"], t_before, 0.1) for f in slow)
check(ok, "the injected straggler shows as slow steps of the job: " +
      (", ".join(f"{f['severity']} {f['metric']} {f['value']:.2f} vs baseline {f['baseline']:.2f}"
                 for f in slow) or "no slow_step finding"))
others = sorted({f["kind"] for f in findings} - {"slow_step", "job_started"})
print(f"     other findings: {others or 'none'} (naming the straggling GPU needs message-level "
      "records: docs/api.md, Real exporters)")
sys.exit(1 if fails else 0)
PY
echo "serve_softflowd: all checks passed"
