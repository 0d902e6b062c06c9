#!/usr/bin/env bash
# serve's roles on a 3-node NATS JetStream cluster (docs/scale-out.md): two collectors and two
# analysers, nodes and an analyser failing, against one serve on the same records.
#   - the records: the `slow-steps` scenario (64 GPUs, 4,832 records, a slow stretch) in eight
#     parts of 5 s by start time, each part's rows split between the two collectors (odd/even);
#     a part goes in once both collectors have published the previous one (the reorder allowance,
#     5 s, covers one part: no window is due before both halves of the parts it holds are read);
#   - the stream: R3 on three nodes; collectors publish with all three URLs, analysers read with
#     all three;
#   - faults: after part 5 (A1 has committed windows), node 1 and analyser A1 are killed with
#     kill -9; part 6 goes through two nodes; node 1 and A1 restart (A1 on its database); before
#     parts 7 and 8, node 2 is frozen with SIGSTOP (a partition: its clients must notice and move),
#     thawed once they are published.
# Both analysers must end with the reference's findings, jobs and step series, no record lost
# and lag 0; A1 must have resumed after its committed windows.
# Usage: cluster.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")/../service" && pwd)
. "$here/serve_harness.sh"
. "$(dirname "$0")/nats_server.sh"
. "$(dirname "$0")/roles_harness.sh"
trap 'for p in "${NATS_NODE_PID[@]}"; do kill -CONT "$p" 2>/dev/null || true; done; nats_stop; cleanup' EXIT
window=20 step=5 reorder=5 idle=15

"$bin" simulate --scenario slow-steps --seed 1 --out "$work/sim" >/dev/null
# Parts of 5 s (the last one from 35 s on), each dealt to the two collectors row by row.
$py "$(dirname "$0")/split_records.py" "$work/sim/flows.csv" "$work" 5,10,15,20,25,30,35 2
total=0 upto=()
for k in 1 2 3 4 5 6 7 8; do
  total=$((total + $(count "$work/p$k-c1.csv") + $(count "$work/p$k-c2.csv")))
  upto[$k]=$total
done

common=(--http 127.0.0.1:0 --window $window --step $step --reorder $reorder --idle-flush $idle
        --topology "$work/sim/topology.csv")
# The reference: one process; file names sort in part order.
start_reference
for f in "$work"/p?-c?.csv; do drop "$work/ref-watch" "$f"; done
settle $ref_port
state $ref_port "$work/ref.json"
kill -TERM "$ref_pid" && wait "$ref_pid"

nats_cluster_start "$work"
declare -A port pid
for c in c1 c2; do
  mkdir -p "$work/$c-watch"
  start_serve "$work/$c.log" --role collector --nats "$NATS_URLS" --nats-replicas 3 \
    --nats-subject records.$c --watch "$work/$c-watch" --http 127.0.0.1:0 --nats-batch 200
  port[$c]=$SERVE_HTTP
done
for a in A1 A2; do
  start_serve "$work/$a.log" --role analyser --nats "$NATS_URLS" --db "$work/$a.sqlite" \
    "${common[@]}"
  port[$a]=$SERVE_HTTP pid[$a]=${pids[-1]}
done
published() {
  local n=0 c
  for c in c1 c2; do
    n=$((n + $(curl -sf "http://127.0.0.1:${port[$c]}/api/v1/ingest" |
                $py -c 'import json,sys; print(json.load(sys.stdin)["stream"]["published_records"])')))
  done
  echo $n
}
# feed K: part K to the collectors, then waits (at most 60 s) until both have published it.
feed() {
  local k=$1 t0=$SECONDS
  drop "$work/c1-watch" "$work/p$k-c1.csv"
  drop "$work/c2-watch" "$work/p$k-c2.csv"
  for _ in $(seq 600); do
    [ "$(published)" -ge "${upto[$k]}" ] && { echo "part $k published in $((SECONDS - t0)) s"; return 0; }
    sleep 0.1
  done
  echo "FAIL part $k not published within 60 s ($(published) of ${upto[$k]} records)"
  exit 1
}
for k in 1 2 3 4 5; do feed $k; done
for _ in $(seq 300); do
  [ "$(health ${port[A1]} '["windows_analysed"]')" -ge 1 ] && break
  sleep 0.1
done
kill -9 "${NATS_NODE_PID[1]}" "${pid[A1]}"
feed 6
nats_node_start "$work" 1 && nats_node_wait "$work" 1
start_serve "$work/A1-2.log" --role analyser --nats "$NATS_URLS" --db "$work/A1.sqlite" \
  "${common[@]}"
port[A1]=$SERVE_HTTP
kill -STOP "${NATS_NODE_PID[2]}"
feed 7
feed 8
kill -CONT "${NATS_NODE_PID[2]}"
settling=()
for a in A1 A2; do settle ${port[$a]} & settling+=($!); done
for p in "${settling[@]}"; do wait "$p"; done
for a in A1 A2; do state ${port[$a]} "$work/$a.json"; done
for c in c1 c2; do curl -sf "http://127.0.0.1:${port[$c]}/api/v1/ingest" >"$work/$c.json"; done

$py - "$work" "$(dirname "$0")" "$total" <<'PY'
import sys
work, total = sys.argv[1], int(sys.argv[3])
sys.path.insert(0, sys.argv[2])
import compare_state as c
ref = c.load(f"{work}/ref.json")
c.check_reference(ref, "slow_step")
c.check_collectors([c.load(f"{work}/c1.json"), c.load(f"{work}/c2.json")], total)
c.check_analyser("A1", c.load(f"{work}/A1.json"), ref, f"{work}/A1-2.log", expect_skipped=False)
c.check_analyser("A2", c.load(f"{work}/A2.json"), ref)
sys.exit(1 if c.fails else 0)
PY
echo "cluster: all checks passed"
