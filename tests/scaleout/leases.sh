#!/usr/bin/env bash
# Shards taken by lease (docs/scale-out.md): the `shards` scenario into one `serve --watch` (the
# reference) and, on a real nats-server, into a routing collector, a recogniser with two shards
# and two analysers started with --take-shards 2 (no --nats-subject: they take the shards
# themselves).
#   - the analysers split the shards, one each;
#   - part 1 (the first 22 s by start time, sorted) is analysed: both commit the same windows;
#   - the analyser holding shard 1 is killed with kill -9: the other takes its shard over once
#     the lease lapses (within the TTL and two renewal periods), from the shard's durable consumer's
#     acknowledged position, skipping what the dead one committed;
#   - part 2 (the rest) is then read by the survivor alone, to lag 0.
# Checks: every window's records, summed over the two analysers (their logs), equal the
# reference's window by window: no record lost, none counted twice (a window of the killed
# analyser analysed again by the survivor would count its shard's records twice); nothing late
# or lost; the survivor's /metrics count the takeover.
# With `fabric` (e2e_serve_shard_leases_fabric), the analysers also publish their windows'
# fabric contributions, each as the parts of the shards it holds (--fabric-stage), and a
# `serve --role fabric --shards 2` judges them: its switch and link findings must be the
# reference's, every field, every window judged whole, although shard 1's windows came from
# one analyser before the takeover and from the other after it. And the holder of shard 1 is not
# killed but stalled (SIGSTOP) past its lease's TTL, then let go on (SIGCONT) once its shard is
# taken: it must learn that it lost the shard before it analyses again, and leave the shard's
# records it still holds to the new holder (the fence), so that the window sums still add up.
# Usage: leases.sh LLMPRISM WORKDIR [fabric]
set -euo pipefail
bin=$1 work=$2 mode=${3:-}
here=$(cd "$(dirname "$0")/../service" && pwd)
. "$here/serve_harness.sh"
. "$(dirname "$0")/nats_server.sh"
. "$(dirname "$0")/roles_harness.sh"
trap 'nats_stop; cleanup' EXIT
window=10 step=5 reorder=5 idle=12 ttl=3
# The fabric stage's switch finding (spine01 degraded) wants 20-s windows, as in e2e_serve_shards.
[ "$mode" = fabric ] && window=20

"$bin" simulate --scenario shards --seed 1 --out "$work/sim" >/dev/null
$py "$(dirname "$0")/split_records.py" "$work/sim/flows.csv" "$work" 22 1
# Each part in start order, so that the windows' records do not depend on the reorder allowance.
for p in 1 2; do
  $py - "$work/p$p-c1.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
rows.sort(key=lambda r: int(r["start_ns"]))
with open(sys.argv[1], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
PY
done
part1=$(count "$work/p1-c1.csv") total=$((part1 + $(count "$work/p2-c1.csv")))

common=(--http 127.0.0.1:0 --window $window --step $step --reorder $reorder --idle-flush $idle
        --topology "$work/sim/topology.csv")
start_reference
drop "$work/ref-watch" "$work/p1-c1.csv"
drop "$work/ref-watch" "$work/p2-c1.csv"

nats_start "$work"
fabric=()
if [ "$mode" = fabric ]; then
  fabric=(--fabric-stage)
  start_serve "$work/fabric.log" --role fabric --shards 2 --nats "$NATS_URL" --db "$work/F.sqlite" \
    --fabric-wait 15 --http 127.0.0.1:0 --window $window --step $step
  fabric_port=$SERVE_HTTP
fi
"$bin" recognise --nats "$NATS_URL" --shards 2 --window $window --step $step \
  --topology "$work/sim/topology.csv" 2>"$work/recogniser.log" &
pids+=($!)
mkdir -p "$work/col-watch"
start_serve "$work/collector.log" --role collector --nats "$NATS_URL" --nats-subject records.c1 \
  --route-by-job --watch "$work/col-watch" --http 127.0.0.1:0 --nats-batch 500 \
  --window $window --step $step
col_port=$SERVE_HTTP
declare -A port pid
# Started together, as an operator's deployment would: each waits a TTL before taking shards, so
# that both see each other and take one each.
for a in A B; do
  "$bin" serve --role analyser --nats "$NATS_URL" --db "$work/$a.sqlite" --take-shards 2 \
    --lease-ttl $ttl "${fabric[@]}" "${common[@]}" --ready-file "$work/ready-$a.json" 2>"$work/$a.log" &
  pids+=($!) pid[$a]=$!
done
for a in A B; do
  wait_serve_ready "$work/ready-$a.json" "$work/$a.log"
  port[$a]=$SERVE_HTTP
done
metric() {  # metric ANALYSER NAME: its value in /metrics (empty when unreachable)
  curl -sf "http://127.0.0.1:${port[$1]}/metrics" 2>/dev/null | awk -v n="$2" '$1 == n {print $2}'
}
ingest() {
  curl -sf "http://127.0.0.1:$col_port/api/v1/ingest" |
    $py -c "import json,sys; print(json.load(sys.stdin)['stream']$1)"
}

# The two analysers split the two shards.
for _ in $(seq 100); do
  [ "$(metric A llmprism_shards_held)" = 1 ] && [ "$(metric B llmprism_shards_held)" = 1 ] && break
  sleep 0.1
done
check "$([ "$(metric A llmprism_shards_held)" = 1 ] && [ "$(metric B llmprism_shards_held)" = 1 ] \
  && echo ok || echo fail)" "the two analysers took one shard each"
grep -h "took shard" "$work/A.log" "$work/B.log"
if grep -q "took shard 1" "$work/A.log"; then victim=A survivor=B; else victim=B survivor=A; fi

# Part 1: forwarded by the recogniser; both analysers read it and commit their first windows.
# The kill comes well within the idle flush (12 s): an analyser whose own records paused that long
# would analyse its open windows before it saw the other die.
drop "$work/col-watch" "$work/p1-c1.csv"
windows() { health "${port[$1]}" '["windows_analysed"]' 2>/dev/null || echo 0; }
for _ in $(seq 300); do
  grep -q "forwarded $part1 records so far" "$work/recogniser.log" &&
    [ "$(metric A llmprism_stream_lag_messages)" = 0 ] &&
    [ "$(metric B llmprism_stream_lag_messages)" = 0 ] &&
    [ "$(windows A)" -gt 0 ] && [ "$(windows B)" -gt 0 ] && break
  sleep 0.1
done
# Two renewals: the committed windows are in the leases and their messages acknowledged.
sleep "$(awk -v t=$ttl 'BEGIN {print t * 2 / 5 + 0.2}')"
check "$([ "$(windows $victim)" -gt 0 ] && [ "$(windows A)" = "$(windows B)" ] && echo ok ||
  echo fail)" "part 1: both committed the same windows ($(windows A), $(windows B)) before $victim \
(shard 1) is killed (stalled, with fabric)"

if [ "$mode" = fabric ]; then
  kill -STOP "${pid[$victim]}"
else
  kill -9 "${pid[$victim]}"
  wait "${pid[$victim]}" 2>/dev/null || true
fi
killed=$(date +%s.%N)
for _ in $(seq 150); do
  [ "$(metric $survivor llmprism_shards_held)" = 2 ] && break
  sleep 0.05
done
took=$(awk -v a="$killed" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
echo "takeover: $survivor holds both shards $took s after the kill (TTL $ttl s)"
check "$([ "$(metric $survivor llmprism_shards_held)" = 2 ] && echo ok || echo fail)" \
  "$survivor took the shard of the killed (or stalled) analyser"
check "$(awk -v t="$took" -v l=$ttl 'BEGIN {print (t < l + 2) ? "ok" : "fail"}')" \
  "within the TTL + 2 s ($took s)"
# The lease thread counts the shard held; the reader logs it when it sets the shard up, next.
for _ in $(seq 50); do
  grep -q "took shard 1 from" "$work/$survivor.log" && break
  sleep 0.1
done
grep "took shard" "$work/$survivor.log"
check "$(grep -q "took shard 1 from" "$work/$survivor.log" && echo ok || echo fail)" \
  "$survivor logs that it took shard 1 from the killed (or stalled) analyser"

if [ "$mode" = fabric ]; then
  kill -CONT "${pid[$victim]}"
  for _ in $(seq 100); do
    grep -q "LOST shard 1" "$work/$victim.log" && break
    sleep 0.1
  done
  check "$(grep -q "LOST shard 1" "$work/$victim.log" && echo ok || echo fail)" \
    "$victim, let go on, learns it lost shard 1: $(grep -o "LOST shard 1.*" "$work/$victim.log" | head -c 60)"
fi

# Part 2, read by the survivor alone.
drop "$work/col-watch" "$work/p2-c1.csv"
for _ in $(seq 300); do
  [ "$(ingest "['published_records']")" -ge "$total" ] && break
  sleep 0.1
done
settle "${port[$survivor]}" & s1=$!
settle $ref_port & s2=$!
wait $s1 $s2
if [ "$mode" = fabric ]; then
  # The stalled analyser's windows after it lost shard 1 hold none of the shard's records.
  settle "${port[$victim]}"
  left=$(metric $victim llmprism_shard_records_left_to_other_holder_total)
  grep "records out of the window" "$work/$victim.log" || true
  check "$([ "${left:-0}" -gt 0 ] && [ "$(metric $victim llmprism_shards_held)" = 0 ] && echo ok ||
    echo fail)" "$victim holds no shard and left $left records of shard 1 to $survivor"
  ended=$(curl -sf "http://127.0.0.1:${port[$victim]}/api/v1/findings" |
    $py -c "import json,sys; print(sum(f['kind'] == 'job_ended' for f in json.load(sys.stdin)['findings']))")
  check "$([ "$ended" = 0 ] && grep -q "handed over" "$work/$victim.log" && echo ok || echo fail)" \
    "$victim says its jobs were handed over, not ended ($ended job_ended findings): $(grep -c "handed over" "$work/$victim.log") jobs"
fi
lag=$(metric $survivor llmprism_stream_lag_messages)
check "$([ "$lag" = 0 ] && echo ok || echo fail)" "$survivor read both shards to lag 0 ($lag)"
check "$([ "$(metric $survivor llmprism_shard_takeovers_total)" = 1 ] && echo ok || echo fail)" \
  "its /metrics count 1 takeover"
# By lease each shard has its own sequence: the ingest API lists them (next message, lag).
read -r verdict shards < <(curl -sf "http://127.0.0.1:${port[$survivor]}/api/v1/ingest" | $py -c '
import json, sys
shards = json.load(sys.stdin)["stream"]["shards"]
ok = len(shards) == 2 and all(p["next_sequence"] > 1 and p["lag_messages"] == 0 for p in shards)
print("ok" if ok else "fail", " ".join("{}:{}:{}".format(p["shard"], p["next_sequence"],
                                                        p["lag_messages"]) for p in shards))')
check "$verdict" "its /api/v1/ingest lists both shards read to lag 0 (shard:next:lag $shards)"
lost=$(curl -sf "http://127.0.0.1:${port[$survivor]}/metrics" |
  awk '/^llmprism_records_(lost|dropped)_total/ {n += $2} END {print n + 0}')
check "$([ "$lost" = 0 ] && echo ok || echo fail)" "no record lost or dropped by $survivor ($lost)"
redone=$(metric $survivor llmprism_stream_records_already_analysed_total)
echo "$survivor skipped $redone records of shard 1 that $victim had committed"
if [ "$mode" = fabric ]; then
  # Every window the reference analysed judged by the fabric stage (nothing pending, lag 0).
  ref_windows=$(health $ref_port '["windows_analysed"]')
  fabric_ingest() { curl -sf "http://127.0.0.1:$fabric_port/api/v1/ingest" | $py -c "import json,sys; s=json.load(sys.stdin)['stream']; print(s$1)"; }
  for _ in $(seq 300); do
    [ "$(fabric_ingest "['windows_judged']")" -ge "$ref_windows" ] &&
      [ "$(fabric_ingest "['windows_pending'] + s['lag_messages']")" -eq 0 ] && break
    sleep 0.1
  done
  state $fabric_port "$work/F.json"
  state $ref_port "$work/ref.json"
  state ${port[$survivor]} "$work/$survivor.json"
  grep "fabric window" "$work/fabric.log"
  $py "$(dirname "$0")/compare_lease_fabric.py" "$work" "$ref_windows" "$survivor" ||
    fails=$((fails + 1))
fi
kill -TERM "${pid[$survivor]}" && wait "${pid[$survivor]}"
grep "released shard" "$work/$survivor.log"
check "$(grep -c "released shard" "$work/$survivor.log" | grep -q '^2$' && echo ok || echo fail)" \
  "$survivor freed both shards at SIGTERM"
kill -TERM "$ref_pid" && wait "$ref_pid"

# Window by window: the records of the two analysers' windows add up to the reference's.
$py - "$work/ref.log" "$work/A.log" "$work/B.log" "$total" <<'PY' || fails=$((fails + 1))
import re, sys
pat = re.compile(r"window (\d+)-(\d+) s: (\d+) records")
def windows(path):
    out = {}
    for line in open(path):
        m = pat.search(line)
        if m:
            key = (int(m[1]), int(m[2]))
            out[key] = out.get(key, 0) + int(m[3])
    return out
ref, a, b = (windows(p) for p in sys.argv[1:4])
bad = 0
for key in sorted(set(ref) | set(a) | set(b)):
    got = a.get(key, 0) + b.get(key, 0)
    flag = "" if got == ref.get(key, 0) else "   <- differs"
    bad += bool(flag)
    print(f"window {key[0]}-{key[1]} s: reference {ref.get(key, 0)}, A {a.get(key, 0)} + "
          f"B {b.get(key, 0)} = {got}{flag}")
print(f"{'ok  ' if bad == 0 else 'FAIL'} every window of the two analysers holds the "
      f"reference's records ({len(ref)} windows, {sys.argv[4]} records published)")
sys.exit(1 if bad else 0)
PY
[ "$fails" -eq 0 ] || exit 1
echo "leases: all checks passed"
