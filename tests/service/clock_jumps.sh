#!/usr/bin/env bash
# Clock jumps in the records never stop `serve` and never move its window clock. A synthetic
# IPFIX stream (ipfix_send.py: 10 records per datagram every 0.1 s of event time from
# 1700000000 s, sent at 20x real time) into `serve --window 20 --step 5 --reorder 2`, with, on
# the way:
#   t=10 s  10 records stamped 0 (1970) in a datagram exported now      -> implausible_time
#   t=12 s  10 records stamped 0 in a datagram exported at 0 (an exporter rebooted with its
#           clock at 0: consistent with itself, 56 years behind the stream) -> held, implausible
#   t=20 s  10 records in 2100 in a datagram exported in 2100           -> held, implausible
#   t=22 s  10 records in 2100 in a datagram exported now               -> implausible_time
#   t=25 s  5 records lasting 2 h (over --max-record-s 3600)            -> implausible_time
#   t=30 s  out-of-order batches: 10 records of t=29 s (within the reorder allowance: accepted)
#           and 10 of t=2 s (older than every open window: late)
#   then a pause of 4 s and the stream resumes 340 s later in event time (more than a window):
#           the stream itself moved, so the clock follows (held, then released, all accepted).
# Asserts: every record counted exactly where it belongs (accepted 9,010; implausible_time 45;
# late 10; no other drop), windows kept coming through the jumps and after the resumed stream,
# /api/v1/health is "degraded" naming the loss, a telemetry_loss finding gives the share lost,
# the incomplete windows are listed, and serve stops cleanly on SIGTERM.
# Usage: clock_jumps.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1 work=$2
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
. "$here/serve_ready.sh"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

"$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --window 20 --step 5 --reorder 2 \
  --idle-flush 2 --ready-file "$work/ready.json" 2>"$work/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
wait_serve_ready "$work/ready.json" "$work/serve.log"
api() { curl -sf "http://127.0.0.1:$SERVE_HTTP$1"; }

PYTHONPATH=$here $py - "$SERVE_UDP" <<'PY'
import sys, time
from ipfix_send import Sender
s = Sender(int(sys.argv[1]))
B = 1_700_000_000_000  # ms
FUTURE = 4_102_444_800_000  # 2100-01-01, ms
def tick(t_ms, n=10, dur=50):
    return [(f"10.0.0.{1 + i % 8}", f"10.0.1.{1 + (i * 3) % 8}", t_ms, t_ms + dur, 4096)
            for i in range(n)]
def stream(t0_s, t1_s, inject=None, speed=20.0):
    start = time.monotonic()
    for k in range(int(t0_s * 10), int(t1_s * 10)):
        s.send(tick(B + k * 100))
        if inject:
            inject(k / 10)
        delay = (k - int(t0_s * 10) + 1) / 10 / speed - (time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)
def inject(t):
    now_s = (B + int(t * 1000)) // 1000
    if t == 10.0: s.send(tick(0), export_s=now_s)                       # 1970, exported now
    if t == 12.0: s.send(tick(0), export_s=0)                           # rebooted, clock at 0
    if t == 20.0: s.send(tick(FUTURE), export_s=FUTURE // 1000)         # 2100, exported 2100
    if t == 22.0: s.send(tick(FUTURE), export_s=now_s)                  # 2100, exported now
    if t == 25.0: s.send([(f"10.0.0.{i + 1}", "10.0.1.1", B + 25_000 - 7_200_000, B + 25_000, 1)
                          for i in range(5)], export_s=now_s)           # lasting 2 h
    if t == 30.0:
        s.send(tick(B + 29_000), export_s=now_s)                        # 1 s old: in time
        s.send(tick(B + 2_000), export_s=now_s)                         # 28 s old: late
stream(0, 60, inject)
time.sleep(4)                  # a pause...
stream(400, 430)               # ...and the stream resumes 340 s later
print(f"sent {s.records} records")
PY

# Settled: the resumed stream analysed (window end past 1700000420 s), nothing in analysis.
ok=0
for _ in $(seq 200); do
  if api /api/v1/health | $py -c '
import json, sys
h = json.load(sys.stdin)
sys.exit(0 if h["window_end_ns"] >= 1700000420 * 10**9 and h["analysing"] is None else 1)'; then
    ok=1; break
  fi
  sleep 0.2
done
[ $ok = 1 ] || { tail -20 "$work/serve.log"; echo "FAIL windows did not follow the resumed stream"; }
api /api/v1/health >"$work/health.json"
api /api/v1/ingest >"$work/ingest.json"
api "/api/v1/findings?kind=telemetry_loss" >"$work/loss.json"
kill -TERM "$serve_pid"
wait "$serve_pid" && stopped=0 || stopped=$?
$py - "$work" "$ok" "$stopped" <<'PY'
import json, sys
work, settled, stopped = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
h = json.load(open(f"{work}/health.json"))
src = json.load(open(f"{work}/ingest.json"))["sources"][0]
loss = json.load(open(f"{work}/loss.json"))["findings"]
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok
d = src["dropped"]
check(settled, f"windows followed the stream through the jumps and the resumed stream "
      f"(latest window ends {h['window_end_ns'] / 1e9:.0f} s, {h['windows_analysed']} windows)")
check(src["records"] == 9065, f"records decoded {src['records']} (9,065 sent)")
check(src["accepted"] == 9010, f"records accepted {src['accepted']} (9,010 plausible and in time)")
check(d["implausible_time"] == 45, f"implausible_time {d['implausible_time']} (45: 0, 2100, 2 h)")
check(d["late"] == 10, f"late {d['late']} (10 of t=2 s at t=30 s)")
check(d["queue_full"] == 0 and d["buffer_full"] == 0, f"no other drop: {d}")
check(h["status"] == "degraded" and any("telemetry lost" in r for r in h["reasons"]),
      f"health {h['status']}: {h['reasons']}")
check(h["loss"]["records"]["implausible_time"] == 45 and h["loss"]["records"]["late"] == 10,
      f"health loss by reason {h['loss']['records']}")
inc = [w for w in h["recent_incomplete_windows"] if "records_lost" in w]
check(len(inc) >= 1 and sum(sum(w["records_lost"].values()) for w in inc) == 55,
      f"incomplete windows listed: {[(w['end_ns'] // 10**9 - 1700000000, w['records_lost']) for w in inc]}")
share = max((f["value"] for f in loss), default=0)
check(len(loss) >= 1 and 0 < share < 1 and all(f["severity"] in ("info", "warning", "critical") for f in loss),
      f"telemetry_loss findings: {len(loss)}, largest share lost {share:.4f}: "
      f"{loss[0]['summary'] if loss else ''}")
check(stopped == 0, f"SIGTERM: exit {stopped}")
sys.exit(1 if fails else 0)
PY
echo "clock_jumps: all checks passed"
