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
# Two parts by start time: the second is published after the analysers' first windows. Records
# of the first 27 s: the windows ending at 20 and 25 s are due (reorder 2 s) before the second part.
$py "$(dirname "$0")/split_records.py" "$work/sim/flows.csv" "$work" 27 1

. "$(dirname "$0")/roles_harness.sh"

# The reference: one process.
common=(--http 127.0.0.1:0 --window $window --step $step --reorder $reorder --idle-flush $idle
        --topology "$work/sim/topology.csv")
start_reference
drop "$work/ref-watch" "$work/p1-c1.csv"
sleep 1.5
drop "$work/ref-watch" "$work/p2-c1.csv"
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
drop "$work/col-watch" "$work/p1-c1.csv"
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
drop "$work/col-watch" "$work/p2-c1.csv"
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

$py - "$work" "$(dirname "$0")" <<'PY'
import sys
work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import compare_state as c
ref = c.load(f"{work}/ref.json")
c.check_reference(ref, "slow_step")
c.check_collectors([c.load(f"{work}/collector.json")], 4832)
for a in "ABC":
    c.check_analyser(a, c.load(f"{work}/{a}.json"), ref,
                     None if a == "A" else f"{work}/{a}-2.log")
c.check("llmprism_stream_lag_messages 0" in open(f"{work}/B.metrics").read(),
        "analyser B's /metrics: llmprism_stream_lag_messages 0")
sys.exit(1 if c.fails else 0)
PY
echo "roles: all checks passed"
