#!/usr/bin/env bash
# The fabric stage while one shard's jobs pause (docs/scale-out.md, The fabric stage): the
# `shards` scenario cut to 50 s, its 64-GPU job on shard 0 and its two 32-GPU jobs on shard 1,
# shard 1's records cut out from 15 to 42 s after the start (more than a 20-s window), fed to one
# `serve --watch` (the reference) and, by shard, through two collectors publishing on
# records.shard.<n>.c into two analysers with --fabric-stage, judged by `serve --role fabric
# --shards 2`. Shard 1 has no record of the windows ending 35 and 40 s: it publishes an empty
# contribution for each before its next window, so the fabric stage judges every window whole.
# A second fabric role told of three shards (--shards 3, shard 2 never publishing) must still
# judge every window without shard 2, and only it: an empty contribution is a shard's word, not
# something the fabric stage assumes.
# Checks: no window judged incomplete and no telemetry_loss finding; the fabric stage's switch
# and link findings are the reference's (id, kind, severity, job, GPUs, switches, times,
# windows); the shards' jobs and job findings are the reference's (the paused jobs' windows on
# the service's grid); the empty contributions published are those received; the 3-shard role
# judges every window incomplete, naming shard 2 alone.
# With PAUSE_FROM PAUSE_TO given (seconds after the start; default 15 42), shard 1's records are
# cut out over that span instead: `25 60` ends them at 25 s while shard 0's go on to 50 s (tails
# that differ, or a pause running past the end). Caught up with no record, shard 1's analyser
# then takes its clock from the fabric stream (the newest window end shard 0 published): it
# analyses the windows up to it that hold its records, as the reference does, and publishes an
# empty contribution for the others; the same checks hold.
# Usage: fabric_pause.sh LLMPRISM WORKDIR [PAUSE_FROM PAUSE_TO]
set -euo pipefail
bin=$1 work=$2 pause_from=${3:-15} pause_to=${4:-42}
here=$(cd "$(dirname "$0")/../service" && pwd)
. "$here/serve_harness.sh"
. "$(dirname "$0")/nats_server.sh"
. "$(dirname "$0")/roles_harness.sh"
trap 'nats_stop; cleanup' EXIT
window=20 step=5 reorder=2 idle=6

"$bin" simulate --scenario shards --seed 1 --duration 50 --out "$work/sim" >/dev/null
$py "$(dirname "$0")/split_by_job.py" "$work/sim" "$work" job0=0,job1=1,job2=1 1 "$pause_from" "$pause_to"

common=(--http 127.0.0.1:0 --window $window --step $step --reorder $reorder --idle-flush $idle
        --topology "$work/sim/topology.csv")
start_reference
drop "$work/ref-watch" "$work/all.csv"

nats_start "$work"
declare -A port col_port
for s in 0 1; do
  mkdir -p "$work/col$s-watch"
  start_serve "$work/collector$s.log" --role collector --nats "$NATS_URL" \
    --nats-subject "records.shard.$s.c" --watch "$work/col$s-watch" --http 127.0.0.1:0 \
    --nats-batch 500 --window $window --step $step
  col_port[$s]=$SERVE_HTTP
  start_serve "$work/S$s.log" --role analyser --nats "$NATS_URL" --db "$work/S$s.sqlite" \
    --nats-subject "records.shard.$s.>" --fabric-stage "${common[@]}"
  port[$s]=$SERVE_HTTP
done
start_serve "$work/fabric.log" --role fabric --shards 2 --nats "$NATS_URL" --db "$work/F.sqlite" \
  --fabric-wait 15 --http 127.0.0.1:0 --window $window --step $step
fabric_port=$SERVE_HTTP
start_serve "$work/fabric3.log" --role fabric --shards 3 --nats "$NATS_URL" \
  --db "$work/F3.sqlite" --fabric-wait 10 --http 127.0.0.1:0 --window $window --step $step
fabric3_port=$SERVE_HTTP
# Shard 1's records before and after its pause go into the stream back to back: its analyser
# reads them as a backlog, in reads that hold records from both sides of the gap. The window
# thread's clock guard holds the records after the gap (more than a window ahead) and must let
# them through once they agree, not refuse them as contested by the records read before them.
drop "$work/col0-watch" "$work/shard0.csv"
drop "$work/col1-watch" "$work/paused-1.csv"
# (nothing after a pause running past the end)
[ "$(wc -l <"$work/paused-2.csv")" -le 1 ] || drop "$work/col1-watch" "$work/paused-2.csv"

settling=()
for p in $ref_port ${port[0]} ${port[1]}; do settle $p & settling+=($!); done
for p in "${settling[@]}"; do wait "$p"; done
state $ref_port "$work/ref.json"
for s in 0 1; do state ${port[$s]} "$work/S$s.json"; done
# Both fabric roles have judged every window shard 0 analysed (it has one of every window).
windows=$(health ${port[0]} '["windows_analysed"]')
fabric_stream() { curl -sf "http://127.0.0.1:$1/api/v1/ingest" | $py -c "import json,sys; s=json.load(sys.stdin)['stream']; print(s$2)"; }
for p in $fabric_port $fabric3_port; do
  for _ in $(seq 300); do
    [ "$(fabric_stream $p "['windows_judged']")" -ge "$windows" ] &&
      [ "$(fabric_stream $p "['windows_pending'] + s['lag_messages']")" -eq 0 ] && break
    sleep 0.1
  done
done
state $fabric_port "$work/F.json"
# A shard whose clock came from the fabric stream analysed windows after its own tail (those
# holding its records) once the other shard published them: its state again, now final.
for p in ${port[0]} ${port[1]}; do settle $p; done
for s in 0 1; do state ${port[$s]} "$work/S$s.json"; done
state $fabric3_port "$work/F3.json"
grep -h "fabric window\|WITHOUT" "$work/fabric.log" || true
grep -h "window " "$work/S1.log" | grep -v fabric || true

$py "$(dirname "$0")/compare_fabric_pause.py" "$work" || fails=$((fails + 1))
[ "$fails" -eq 0 ] || exit 1
echo "fabric pause: all checks passed"
