#!/usr/bin/env bash
# Sustained UDP ingest of `llmprism serve` on loopback: for each offered
# rate, a fresh serve receives `tiny` looped (--loop N, shifted in time, 20 records per IPFIX
# datagram, encoded before sending) and we count what reached the windows:
#   loss = 1 - accepted / sent      (socket drops, collector queue drops, record queue drops)
# and the serve process's peak RSS (VmHWM). Not a CTest (takes minutes); figures: docs/api.md.
#   ingest_bench.sh LLMPRISM WORKDIR "RATE..." [LOOPS] [SENDERS] [RECORDS_PER_DATAGRAM] [REPEAT]
# RATE 0 = as fast as one sender goes; SENDERS > 1 runs that many replayers at once (for
# offered loads beyond one sender; each sends RATE). REPEAT > 1 resends the encoded datagrams,
# shifted later each time (`replay --repeat`), for long runs without encoding or memory cost.
# serve's RSS (VmRSS) is sampled every second into WORKDIR/rss-RATE.txt and printed.
# SERVE_CPU_PERCENT=N runs serve in a cgroup limited to N% of one CPU (cgroup v1 cpu or v2
# cpu.max; root): on a 2-core machine one sender cannot offer 10x what a whole core of serve
# takes loss-free, but it can offer 10x what a tenth of a core takes — the same question, is
# memory bounded when input outruns analysis, at a rate this machine can produce.
set -euo pipefail
bin=$1 work=$2 rates=$3 loops=${4:-40} senders=${5:-1} per_dgram=${6:-20} repeat=${7:-1}
py=/usr/bin/python3
. "$(dirname "$0")/serve_ready.sh"
mkdir -p "$work"
[ -f "$work/tiny/flows.ipfix" ] || "$bin" simulate --scenario tiny --seed 1 --out "$work/tiny" >/dev/null
printf "%-12s %-8s %-10s %-10s %-10s %-10s %-10s %-10s %s\n" offered senders sent accepted loss sock_drop dgram_drop q_drop peak_rss_MB
for rate in $rates; do
  rm -f "$work/ready.json"
  "$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --topology "$work/tiny/topology.csv" \
    --ready-file "$work/ready.json" --idle-flush 2 2>"$work/serve.log" &
  spid=$!
  if [ -n "${SERVE_CPU_PERCENT:-}" ]; then
    if [ -d /sys/fs/cgroup/cpu ]; then
      cg=/sys/fs/cgroup/cpu/llmprism-ingest-bench; mkdir -p "$cg"
      echo 100000 >"$cg/cpu.cfs_period_us"; echo $((SERVE_CPU_PERCENT * 1000)) >"$cg/cpu.cfs_quota_us"
    else
      cg=/sys/fs/cgroup/llmprism-ingest-bench; mkdir -p "$cg"
      echo "$((SERVE_CPU_PERCENT * 1000)) 100000" >"$cg/cpu.max"
    fi
    echo "$spid" >"$cg/cgroup.procs"
  fi
  wait_serve_ready "$work/ready.json" "$work/serve.log"
  http=$SERVE_HTTP udp=$SERVE_UDP
  t0=$(date +%s.%N)
  ( while kill -0 "$spid" 2>/dev/null; do
      echo "$(date +%s.%N) $(awk '/VmRSS/ {print int($2/1024)}' /proc/$spid/status 2>/dev/null)"
      sleep 1
    done >"$work/rss-$rate.txt" ) &
  rpids=()
  for s in $(seq "$senders"); do
    "$bin" replay "$work/tiny/flows.ipfix" --to "127.0.0.1:$udp" --rate "$rate" --loop "$loops" \
      --preload --records-per-datagram "$per_dgram" --repeat "$repeat" >"$work/replay-$s.log" &
    rpids+=($!)
  done
  for p in "${rpids[@]}"; do wait "$p" || true; done
  sent=0; secs=0
  for s in $(seq "$senders"); do
    read -r n t < <($py -c "import re;m=re.search(r'replay: (\d+) records in \d+ datagrams in ([\d.]+) s',open('$work/replay-$s.log').read());print(m.group(1),m.group(2))")
    sent=$((sent + n)); secs=$t
  done
  # Let the pipeline drain (bounded).
  for _ in $(seq 40); do
    q=$(curl -sf "http://127.0.0.1:$http/api/v1/ingest" | $py -c 'import json,sys; print(json.load(sys.stdin)["queue"]["records"])')
    [ "$q" = 0 ] && break; sleep 0.25
  done
  sleep 1
  curl -sf "http://127.0.0.1:$http/api/v1/ingest" >"$work/ingest.json"
  rss=$(awk '/VmHWM/ {print int($2/1024)}' /proc/$spid/status)
  kill -TERM "$spid"; wait "$spid" || true
  $py - "$work/ingest.json" "$sent" "$secs" "$rate" "$senders" "$rss" <<'PY'
import json, sys
ing = json.load(open(sys.argv[1])); sent = int(sys.argv[2]); secs = float(sys.argv[3])
s = ing["sources"][0]
accepted = s["records"] - s["dropped"]["queue_full"] - s["dropped"]["buffer_full"]
loss = 1 - accepted / sent if sent else 0
offered = sent / secs if secs else 0
print(f"{offered:<12.0f} {sys.argv[5]:<8} {sent:<10} {accepted:<10} {loss*100:<9.3f}% {s['socket_drops']:<10} {s['datagrams_dropped']:<10} {s['dropped']['queue_full']:<10} {sys.argv[6]}")
PY
  echo "  serve RSS MB, one sample a second: $(awk -v t0="$t0" '$2 != "" {printf "%d@%.0fs ", $2, $1 - t0}' "$work/rss-$rate.txt")"
done
