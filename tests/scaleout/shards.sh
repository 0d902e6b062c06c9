#!/usr/bin/env bash
# Sharding by job (docs/scale-out.md): the `shards` scenario (three jobs of 64, 32 and 32
# GPUs) into one `serve --watch` (the reference), and the same records into a collector that
# routes by job (--route-by-job), a recogniser with two shards (`llmprism recognise`) and two
# analysers, one per shard (--nats-subject 'records.shard.N.>'), on a real nats-server.
#   - part 1 (the first 17 s by start time) comes before any map exists: every record goes to the
#     recogniser (records.unrouted), which recognises the jobs from the pair graph, writes the map
#     and forwards the records to their shards;
#   - part 2 (the rest) comes once the collector follows the map: routed by the collector itself,
#     while the recogniser, killed with kill -9 and restarted, rebuilds its graph from the pair
#     stream and goes on from the map it wrote.
# The analysers run with --fabric-stage: each window's fabric contribution goes to a
# `serve --role fabric --shards 2`, which judges switches and links from both shards' records.
# Checks: every record published and analysed, none lost; the map spreads the jobs over both
# shards; each job (GPUs, layout, windows, step series) and each finding about jobs (kind,
# severity, job, GPUs, times, windows) of the two shards together equals the reference's; the
# fabric role's switch and link findings equal the reference's (id, kind, severity, job, GPUs,
# switches, times, windows), every window judged whole, and the shards report none of their own.
# Shard 1 publishes its contributions in pieces; the fabric role is killed (kill -9) and
# restarted on its database once it has judged two windows.
# Usage: shards.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")/../service" && pwd)
. "$here/serve_harness.sh"
. "$(dirname "$0")/nats_server.sh"
. "$(dirname "$0")/roles_harness.sh"
trap 'nats_stop; cleanup' EXIT
window=20 step=5 reorder=2 idle=10

"$bin" simulate --scenario shards --seed 1 --out "$work/sim" >/dev/null
$py "$(dirname "$0")/split_records.py" "$work/sim/flows.csv" "$work" 17 1
part1=$(count "$work/p1-c1.csv") total=$((part1 + $(count "$work/p2-c1.csv")))

common=(--http 127.0.0.1:0 --window $window --step $step --reorder $reorder --idle-flush $idle
        --topology "$work/sim/topology.csv")
start_reference
drop "$work/ref-watch" "$work/p1-c1.csv"
sleep 1.5
drop "$work/ref-watch" "$work/p2-c1.csv"
settle $ref_port
state $ref_port "$work/ref.json"
kill -TERM "$ref_pid" && wait "$ref_pid"

nats_start "$work"
"$bin" recognise --nats "$NATS_URL" --shards 2 --window $window --step $step \
  --topology "$work/sim/topology.csv" 2>"$work/recogniser.log" &
rec_pid=$!
pids+=($rec_pid)
mkdir -p "$work/col-watch"
start_serve "$work/collector.log" --role collector --nats "$NATS_URL" --nats-subject records.c1 \
  --route-by-job --watch "$work/col-watch" --http 127.0.0.1:0 --nats-batch 500 \
  --window $window --step $step
col_port=$SERVE_HTTP
declare -A port
# Shard 1 publishes its contributions (about 300 kB a window) in pieces of 100 KiB, as a
# paper-scale window's (tens of MB) must go past a NATS server's 1 MB message limit; shard 0 in
# one message each.
declare -A piece=([0]="" [1]="--fabric-piece-kb 100")
for s in 0 1; do
  start_serve "$work/S$s.log" --role analyser --nats "$NATS_URL" --db "$work/S$s.sqlite" \
    --nats-subject "records.shard.$s.>" --fabric-stage ${piece[$s]} "${common[@]}"
  port[$s]=$SERVE_HTTP
done
# The fabric stage: a window waits at most 15 s for a shard's contribution (the default, two
# window lengths, would outlast the test's waits).
start_serve "$work/fabric.log" --role fabric --shards 2 --nats "$NATS_URL" --db "$work/F.sqlite" \
  --fabric-wait 15 --http 127.0.0.1:0 --window $window --step $step
fabric_port=$SERVE_HTTP fabric_pid=${pids[-1]}
fabric_ingest() { curl -sf "http://127.0.0.1:$fabric_port/api/v1/ingest" | $py -c "import json,sys; s=json.load(sys.stdin)['stream']; print(s$1)"; }
ingest() { curl -sf "http://127.0.0.1:$col_port/api/v1/ingest" | $py -c "import json,sys; print(json.load(sys.stdin)['stream']$1)"; }
# Part 1: no map yet. Wait until the recogniser forwarded it all and the collector follows a map.
drop "$work/col-watch" "$work/p1-c1.csv"
for _ in $(seq 300); do
  grep -q "forwarded $part1 records so far" "$work/recogniser.log" &&
    [ "$(ingest "['shard_map_gpus']")" -gt 0 ] && break
  sleep 0.1
done
unrouted=$(ingest "['unrouted_records']")
check "$([ "$unrouted" -eq "$part1" ] && echo ok || echo fail)" \
  "part 1: the collector sent all $part1 records to the recogniser, no map yet ($unrouted)"
check "$(grep -q "forwarded $part1 records so far" "$work/recogniser.log" && echo ok || echo fail)" \
  "the recogniser forwarded them to their shards"
# The recogniser killed (kill -9) and restarted: it goes on from the map it wrote (the same jobs
# recognised from the pair stream again: no entry changes) while part 2 is routed.
kill -9 $rec_pid
wait $rec_pid 2>/dev/null || true
"$bin" recognise --nats "$NATS_URL" --shards 2 --window $window --step $step \
  --topology "$work/sim/topology.csv" 2>"$work/recogniser-2.log" &
rec_pid=$!
pids+=($rec_pid)
drop "$work/col-watch" "$work/p2-c1.csv"
for _ in $(seq 300); do
  [ "$(ingest "['published_records']")" -ge "$total" ] && break
  sleep 0.1
done
# The fabric stage killed (kill -9) once it has judged two windows, while the shards go on with
# part 2, and restarted on its database: it reads on from the position committed with its last
# judged window, and its finding about spine01 goes on from the state it had (same id, each
# window counted once). Not before part 2: a pause in the records would let the shards' idle
# flush take windows early.
for _ in $(seq 300); do
  [ "$(fabric_ingest "['windows_judged']")" -ge 2 ] && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$fabric_port/api/v1/ingest" >"$work/F-before.json"
kill -9 $fabric_pid
wait $fabric_pid 2>/dev/null || true
start_serve "$work/fabric-2.log" --role fabric --shards 2 --nats "$NATS_URL" --db "$work/F.sqlite" \
  --fabric-wait 15 --http 127.0.0.1:0 --window $window --step $step
fabric_port=$SERVE_HTTP
check "$(grep -q "windows up to .* judged" "$work/fabric-2.log" && echo ok || echo fail)" \
  "the restarted fabric stage resumed after the windows it had judged: $(grep -o "from sequence .* judged)" "$work/fabric-2.log")"
settling=()
for s in 0 1; do settle ${port[$s]} & settling+=($!); done
for p in "${settling[@]}"; do wait "$p"; done
for s in 0 1; do state ${port[$s]} "$work/S$s.json"; done
# The fabric stage has judged every window both shards analysed (nothing pending, lag 0), the
# window judged before its restart included.
# Counted by windows judged: contributions read before the restart may be read again after it,
# so their count can reach both shards' windows while the last window's are still on the way.
w0=$(health ${port[0]} '["windows_analysed"]') w1=$(health ${port[1]} '["windows_analysed"]')
windows=$(( w0 > w1 ? w0 : w1 ))
# The windows the first fabric stage committed: its log's lines, one per window (its snapshot,
# F-before.json, misses a window judged between the snapshot and the kill).
judged_before=$(grep -c "llmprism serve: fabric window [0-9]" "$work/fabric.log" || true)
for _ in $(seq 300); do
  [ "$(fabric_ingest "['windows_judged'] + $judged_before")" -ge "$windows" ] &&
    [ "$(fabric_ingest "['windows_pending'] + s['lag_messages']")" -eq 0 ] && break
  sleep 0.1
done
state $fabric_port "$work/F.json"
curl -sf "http://127.0.0.1:$fabric_port/metrics" >"$work/fabric.metrics"
grep "fabric window" "$work/fabric.log" | tail -3
curl -sf "http://127.0.0.1:$col_port/api/v1/ingest" >"$work/collector.json"
kill -TERM $rec_pid && wait $rec_pid
grep "recognise:" "$work/recogniser.log" | tail -2
grep "recognise:" "$work/recogniser-2.log"
check "$(grep -q "128 GPUs mapped in bucket" "$work/recogniser-2.log" && echo ok || echo fail)" \
  "the restarted recogniser read the map it had written (128 GPUs)"
check "$(grep "map entries written" "$work/recogniser-2.log" | grep -qv " 0 map entries" && echo fail || echo ok)" \
  "the restarted recogniser recognised the same jobs: no map entry changed"

$py "$(dirname "$0")/compare_shards.py" "$work" "$part1" "$total" || fails=$((fails + 1))
[ "$fails" -eq 0 ] || exit 1
echo "shards: all checks passed"
