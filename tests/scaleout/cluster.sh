#!/usr/bin/env bash
# serve's roles on a 3-node NATS JetStream cluster (docs/scale-out.md): two collectors and two
# analysers, nodes and an analyser failing, against one serve on the same records.
#   - the records: a scenario in N parts of P s by start time (the last one holds the rest), each
#     part's records dealt to the two collectors in turn; a part goes in once both collectors have
#     published the previous one. The reorder allowance covers one part, the last part holds no
#     more than one part's time (both checked) and the parts begin on the windows' step grid
#     (CLUSTER_ALIGN) or, cut from the first record's start, after a grid line by more than the
#     records last: so no window is due before both halves of the parts it holds are read;
#   - the stream: R3 on three nodes; collectors publish with all three URLs, analysers read with
#     all three;
#   - faults: after part N-3, once A1 has committed windows (the records pause meanwhile: the
#     idle flush must outlast that), node 1 and analyser A1 are killed with kill -9; part N-2
#     goes through two nodes; node 1 and A1 restart (A1 on its database); before parts N-1 and
#     N, node 2 is frozen with SIGSTOP (a partition: its clients must notice and move), thawed
#     once they are published.
# Both analysers must end with the reference's findings, jobs and step series, no record lost
# and lag 0; A1 must have resumed after its committed windows. The figures of the run (records,
# wall time, redeliveries, A1's catch-up after its restart, peak RSS) are printed at the end.
#
# Usage: cluster.sh LLMPRISM WORKDIR [SPLIT_IPFIX]
# The defaults are CTest e2e_serve_roles_cluster: `slow-steps` (4,832 records, flows.csv) in 8
# parts of 5 s. Environment, for larger runs (target long_scaleout_faults_cluster: `faults`):
#   CLUSTER_SCENARIO, CLUSTER_SEED     the scenario simulated (slow-steps, 1)
#   CLUSTER_PARTS, CLUSTER_PART_S      N parts (at least 4) of P seconds (8, 5)
#   CLUSTER_WINDOW, CLUSTER_STEP, CLUSTER_REORDER, CLUSTER_IDLE   serve's window options (20 5 5 15)
#   CLUSTER_BATCH                      the collectors' --nats-batch (200)
#   CLUSTER_FAULT_KINDS                finding kinds the reference must have (slow_step; a,b,...)
#   CLUSTER_FEED_S, CLUSTER_SETTLE_S   bounds of the waits for a part and for the windows (60, 90)
#   CLUSTER_KILL_AFTER                 windows A1 has committed when it is killed, at least (1)
#   CLUSTER_ALIGN=1                    parts cut from the step grid below the first record's start,
#                                      not from that start (slow-steps: 1.96 s after a grid line)
# A scenario without flows.csv (the large ones) is split as IPFIX by SPLIT_IPFIX, and its parts are
# given to the reference one at a time: `serve` (one process) skips windows when its analysis falls
# more than a window behind its reading, and a whole minute of `faults` read at once does that.
set -euo pipefail
bin=$1 work=$2 split_ipfix=${3:-}
here=$(cd "$(dirname "$0")/../service" && pwd)
. "$here/serve_harness.sh"
. "$(dirname "$0")/nats_server.sh"
. "$(dirname "$0")/roles_harness.sh"
trap 'for p in "${NATS_NODE_PID[@]}"; do kill -CONT "$p" 2>/dev/null || true; done; nats_stop; cleanup' EXIT
scenario=${CLUSTER_SCENARIO:-slow-steps} seed=${CLUSTER_SEED:-1}
parts=${CLUSTER_PARTS:-8} part_s=${CLUSTER_PART_S:-5}
window=${CLUSTER_WINDOW:-20} step=${CLUSTER_STEP:-5} reorder=${CLUSTER_REORDER:-5}
idle=${CLUSTER_IDLE:-15} batch=${CLUSTER_BATCH:-200} fault_kinds=${CLUSTER_FAULT_KINDS:-slow_step}
feed_s=${CLUSTER_FEED_S:-60} settle_s=${CLUSTER_SETTLE_S:-90} kill_after=${CLUSTER_KILL_AFTER:-1}
align=$([ "${CLUSTER_ALIGN:-0}" = 1 ] && echo "$step" || true)
[ "$parts" -ge 4 ] ||
  { echo "FAIL CLUSTER_PARTS must be at least 4 (the faults need 3 parts)"; exit 1; }
$py -c "import sys; sys.exit(not $part_s <= $reorder)" ||
  { echo "FAIL parts of $part_s s need as long a reorder allowance (CLUSTER_REORDER $reorder)"
    exit 1; }
t_start=$SECONDS

"$bin" simulate --scenario "$scenario" --seed "$seed" --out "$work/sim" >/dev/null
# split_parts: the records in $parts parts by start time, each dealt to the two collectors;
# sets ext (csv or ipfix), paced_reference and upto[k] (the records of parts 1..k).
split_parts() {
  local cuts sizes k=0 total=0 n last
  cuts=$(seq -s, "$part_s" "$part_s" $(( (parts - 1) * part_s )))
  if [ -f "$work/sim/flows.csv" ]; then
    ext=csv paced_reference=0
    sizes=$($py "$(dirname "$0")/split_records.py" "$work/sim/flows.csv" "$work" "$cuts" 2 $align)
  else
    [ -x "$split_ipfix" ] || { echo "FAIL $scenario has no flows.csv: give SPLIT_IPFIX"; exit 1; }
    ext=ipfix paced_reference=1
    sizes=$("$split_ipfix" "$work/sim/flows.ipfix" "$work" "$cuts" 2 $align)
  fi
  for n in $(echo "$sizes" | awk '/^part/ {print $3}'); do
    k=$((k + 1)) total=$((total + n))
    upto[$k]=$total
  done
  [ "$k" = "$parts" ] || { echo "FAIL split into $k parts, not $parts"; exit 1; }
  # The last part holds the rest: more than one part's time and its records would make windows
  # due before the other collector's half of it is read.
  last=$(echo "$sizes" | awk '/^last start/ {print $3}')
  $py -c "import sys; sys.exit(not $last < $parts * $part_s)" ||
    { echo "FAIL records start until $last s: $parts parts of $part_s s do not cover them"
      exit 1; }
}
upto=()
split_parts
total=${upto[$parts]}
echo "$scenario seed $seed: $total records in $parts parts of $part_s s ($ext)"
# part_files K: part K's files, one per collector (split_ipfix numbers parts with two digits).
part_files() {
  if [ "$ext" = csv ]; then echo "$work/p$1-c1.csv $work/p$1-c2.csv"
  else printf '%s/p%02d-c1.ipfix %s/p%02d-c2.ipfix\n' "$work" "$1" "$work" "$1"; fi
}

common=(--http 127.0.0.1:0 --window $window --step $step --reorder $reorder --idle-flush $idle
        --topology "$work/sim/topology.csv")
# ingest_field PORT EXPR: one value of /api/v1/ingest, e.g. '["stream"]["lag_messages"]'.
ingest_field() {
  curl -sf "http://127.0.0.1:$1/api/v1/ingest" |
    $py -c "import json,sys; print(json.load(sys.stdin)$2)"
}
# feed_reference: every part into the reference; paced, a part once the previous one is read
# and no analysis is running (so at most two windows are ever due at once).
feed_reference() {
  local k f deadline
  for k in $(seq "$parts"); do
    for f in $(part_files "$k"); do drop "$work/ref-watch" "$f"; done
    [ "$paced_reference" = 1 ] || continue
    deadline=$((SECONDS + feed_s))
    until [ "$(ingest_field $ref_port '["sources"][0]["records"]')" -ge "${upto[$k]}" ] &&
          [ "$(health $ref_port '["analysing"]')" = None ]; do
      [ $SECONDS -lt $deadline ] ||
        { echo "FAIL reference did not read part $k in $feed_s s"; exit 1; }
      sleep 0.2
    done
  done
}
# The reference: one process; file names sort in part order.
start_reference
feed_reference
settle $ref_port
state $ref_port "$work/ref.json"
ref_rss=$(peak_rss_mb "$ref_pid")
kill -TERM "$ref_pid" && wait "$ref_pid"
echo "reference done at $((SECONDS - t_start)) s"

nats_cluster_start "$work"
declare -A port pid
for c in c1 c2; do
  mkdir -p "$work/$c-watch"
  start_serve "$work/$c.log" --role collector --nats "$NATS_URLS" --nats-replicas 3 \
    --nats-subject records.$c --watch "$work/$c-watch" --http 127.0.0.1:0 --nats-batch "$batch"
  port[$c]=$SERVE_HTTP
done
for a in A1 A2; do
  start_serve "$work/$a.log" --role analyser --nats "$NATS_URLS" --db "$work/$a.sqlite" \
    "${common[@]}"
  port[$a]=$SERVE_HTTP pid[$a]=${pids[-1]}
done
published() {
  local n=0 c
  for c in c1 c2; do n=$((n + $(ingest_field ${port[$c]} '["stream"]["published_records"]'))); done
  echo $n
}
# feed K: part K to the collectors, then waits (at most feed_s) until both have published it.
feed() {
  local k=$1 t0=$SECONDS files
  files=($(part_files "$k"))
  drop "$work/c1-watch" "${files[0]}"
  drop "$work/c2-watch" "${files[1]}"
  for _ in $(seq $((feed_s * 10))); do
    if [ "$(published)" -ge "${upto[$k]}" ]; then
      echo "part $k published in $((SECONDS - t0)) s"; return 0
    fi
    sleep 0.1
  done
  echo "FAIL part $k not published within $feed_s s ($(published) of ${upto[$k]} records)"
  exit 1
}
# await_windows PORT: A1 must have committed kill_after windows before it is killed (at most
# feed_s), so that its restart resumes after them. The records pause meanwhile: a pause as long
# as the idle flush would have A2 flush its windows before the next part (a window without its
# last step's records, counted nowhere), so that fails here, not as a difference later.
await_windows() {
  local t0=$SECONDS
  for _ in $(seq $((feed_s * 10))); do
    if [ "$(health $1 '["windows_analysed"]')" -ge "$kill_after" ]; then
      echo "A1 has committed $kill_after window(s) $((SECONDS - t0)) s after part $((parts - 3))"
      [ $((SECONDS - t0 + 3)) -lt "$idle" ] && return 0
      echo "FAIL the records paused $((SECONDS - t0)) s for A1's windows: within 3 s of the idle" \
           "flush ($idle s); raise CLUSTER_IDLE"
      exit 1
    fi
    sleep 0.1
  done
  echo "FAIL A1 did not analyse $kill_after windows within $feed_s s of part $((parts - 3))"; exit 1
}
# time_catch_up PORT OUT: writes to OUT the time until the analyser's lag, once seen above 0, is
# 0 again (A1 after its restart: it reads again from its committed position). Polls every 0.5 s:
# a figure of seconds, and each poll costs a curl and a python on a 2-core machine.
time_catch_up() {
  local t0 behind=0 lag
  t0=$(date +%s%N)
  for _ in $(seq $((settle_s * 2))); do
    lag=$(ingest_field "$1" '["stream"]["lag_messages"]' 2>/dev/null || echo x)
    [ "$lag" != x ] && [ "$lag" != None ] && [ "$lag" -gt 0 ] && behind=1
    if [ $behind = 1 ] && [ "$lag" = 0 ]; then
      echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms" >"$2"; return 0
    fi
    sleep 0.5
  done
  echo "never (behind seen: $behind)" >"$2"
}
for k in $(seq $((parts - 3))); do feed $k; done
await_windows ${port[A1]}
kill -9 "${NATS_NODE_PID[1]}" "${pid[A1]}"
feed $((parts - 2))
nats_node_start "$work" 1 && nats_node_wait "$work" 1
start_serve "$work/A1-2.log" --role analyser --nats "$NATS_URLS" --db "$work/A1.sqlite" \
  "${common[@]}"
port[A1]=$SERVE_HTTP pid[A1]=${pids[-1]}
time_catch_up ${port[A1]} "$work/A1-catch-up.txt" &
catch_up_pid=$!
kill -STOP "${NATS_NODE_PID[2]}"
feed $((parts - 1))
feed $parts
kill -CONT "${NATS_NODE_PID[2]}"
settling=()
for a in A1 A2; do settle ${port[$a]} & settling+=($!); done
for p in "${settling[@]}"; do wait "$p"; done
# A catch-up too quick for a poll to see A1 behind (the small scenario) leaves no figure.
kill $catch_up_pid 2>/dev/null || true
for a in A1 A2; do state ${port[$a]} "$work/$a.json"; done
for c in c1 c2; do curl -sf "http://127.0.0.1:${port[$c]}/api/v1/ingest" >"$work/$c.json"; done
catch_up=$(cat "$work/A1-catch-up.txt" 2>/dev/null || echo '(not seen behind)')
echo "figures: $total records, $((SECONDS - t_start)) s in all; A1 caught up $catch_up after its" \
     "restart; peak RSS MB: reference $ref_rss, A1 (restarted) $(peak_rss_mb ${pid[A1]})," \
     "A2 $(peak_rss_mb ${pid[A2]})"

$py - "$work" "$(dirname "$0")" "$total" "$fault_kinds" <<'PY'
import sys
work, total = sys.argv[1], int(sys.argv[3])
sys.path.insert(0, sys.argv[2])
import compare_state as c
ref = c.load(f"{work}/ref.json")
c.check_reference(ref, *sys.argv[4].split(","))
c.check_collectors([c.load(f"{work}/c1.json"), c.load(f"{work}/c2.json")], total)
c.check_analyser("A1", c.load(f"{work}/A1.json"), ref, f"{work}/A1-2.log", expect_skipped=False)
c.check_analyser("A2", c.load(f"{work}/A2.json"), ref)
for name in ("A1", "A2"):
    c.print_stream_figures(name, c.load(f"{work}/{name}.json"))
sys.exit(1 if c.fails else 0)
PY
echo "cluster: all checks passed"
