#!/usr/bin/env bash
# Bad command-line arguments and hostile numbers: each must give a clear message naming what is
# wrong and exit 2 — no abort (exit 134), no hang (every run is under `timeout`), and nothing left
# listening. Also `analyze` of a record at the very end of time (start = end near INT64_MAX),
# whose window end used to overflow and loop forever: it must finish.
# Usage: bad_arguments.sh LLMPRISM WORKDIR
set -uo pipefail
bin=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
. "$(dirname "$0")/checks.sh"

# expect_usage_error PATTERN ARGS...: exit 2 and PATTERN (extended regex) in stderr.
expect_usage_error() {
  local pattern=$1
  shift
  timeout 20 "$bin" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ "$rc" -eq 2 ] && grep -Eq -- "$pattern" "$work/err"; then
    check ok "exit 2 with /$pattern/: $* -> $(head -c 160 "$work/err" | tr '\n' ' ')"
  else
    check fail "$*: exit $rc (expected 2), stderr: $(head -c 300 "$work/err" | tr '\n' ' ')"
  fi
}

printf 'src,dst,start_ns,end_ns,bytes,packets,src_port,dst_port,proto,qp,sampling_rate,switch\n' \
  >"$work/one.csv"
printf '10.0.0.1,10.0.0.2,1700000000000000000,1700000000001000000,1000,1,1,4791,17,1,1,leaf1\n' \
  >>"$work/one.csv"
udp=(--ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0)

# serve
expect_usage_error "ready-file /nonexistent/x" serve "${udp[@]}" --ready-file /nonexistent/x
expect_usage_error "--k.*not a finite number" serve "${udp[@]}" --k nan
expect_usage_error "--k.*not a finite number" serve "${udp[@]}" --k inf
expect_usage_error "--threads.*-5" serve "${udp[@]}" --threads -5
expect_usage_error "--window.*out of range" serve "${udp[@]}" --window 1e300
expect_usage_error "--window.*not a finite number" serve "${udp[@]}" --window nan
expect_usage_error "--alertmanager 'foo:9093': expected http" serve "${udp[@]}" \
  --alertmanager http://127.0.0.1:9093,foo:9093
expect_usage_error "--alertmanager.*port above 65535" serve "${udp[@]}" --alertmanager http://h:70000
expect_usage_error "--queue-records" serve "${udp[@]}" --queue-records 0
expect_usage_error "--udp-queue-datagrams" serve "${udp[@]}" --udp-queue-datagrams 0
expect_usage_error "max-buffer-records" serve "${udp[@]}" --max-buffer-records 0
expect_usage_error "--memory-limit" serve "${udp[@]}" --memory-limit lots
expect_usage_error "--http-threads" serve "${udp[@]}" --http-threads 0
expect_usage_error "--http.*bad address or port" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:99999
expect_usage_error "--ipfix-udp.*bad address or port" serve --ipfix-udp 127.0.0.1:abc
expect_usage_error "--exporter-allow 10.0.0.0/99" serve "${udp[@]}" --exporter-allow 10.0.0.0/99
expect_usage_error "--token is empty" serve "${udp[@]}" --token ""
LLMPRISM_TOKEN="" expect_usage_error "LLMPRISM_TOKEN is set but empty" serve "${udp[@]}"
: >"$work/empty-token"
expect_usage_error "token-file.*empty" serve "${udp[@]}" --token-file "$work/empty-token"
nats=(--role analyser --nats nats://127.0.0.1:9 --db "$work/a.sqlite")
expect_usage_error "--take-shards is for --role analyser" serve "${udp[@]}" --take-shards 2
expect_usage_error "--take-shards.*drop --nats-subject" serve "${nats[@]}" --take-shards 2 \
  --nats-subject 'records.shard.0.>'
expect_usage_error "--take-shards" serve "${nats[@]}" --take-shards 0
expect_usage_error "--lease-ttl" serve "${nats[@]}" --take-shards 2 --lease-ttl 0.1
expect_usage_error "--fabric-stage needs the shards it answers for" serve "${nats[@]}" --fabric-stage
expect_usage_error "--fabric-stage is for --role analyser" serve "${udp[@]}" --fabric-stage
expect_usage_error "--nats-fetch-batches: .*not in range" serve "${nats[@]}" --nats-fetch-batches 0
expect_usage_error "--nats-fetch-batches: .*not in range" serve "${nats[@]}" --nats-fetch-batches 257
expect_usage_error "--nats-fetch-batches" serve "${nats[@]}" --nats-fetch-batches lots
expect_usage_error "--nats-fetch-batches is for --role analyser" serve "${udp[@]}" \
  --nats-fetch-batches 8
expect_usage_error "--fabric-piece-kb is for --fabric-stage" serve "${nats[@]}" \
  --nats-subject 'records.shard.0.>' --fabric-piece-kb 100
expect_usage_error "--shards and --fabric-wait are for --role fabric" serve "${udp[@]}" --shards 2
fabric=(--role fabric --nats nats://127.0.0.1:9 --db "$work/f.sqlite")
expect_usage_error "--role fabric needs --shards" serve "${fabric[@]}"
expect_usage_error "--shards" serve "${fabric[@]}" --shards 0
expect_usage_error "--role fabric reads the shards' fabric contributions only" serve "${fabric[@]}" \
  --shards 2 "${udp[@]}"
expect_usage_error "--role fabric reads fabric" serve "${fabric[@]}" --shards 2 \
  --nats-subject 'records.>'

# replay
expect_usage_error "--to 127.0.0.1:abc.*port" replay "$work/one.csv" --to 127.0.0.1:abc
expect_usage_error "--to 127.0.0.1:99999.*port" replay "$work/one.csv" --to 127.0.0.1:99999
expect_usage_error "--to 127.0.0.1:0.*port" replay "$work/one.csv" --to 127.0.0.1:0
expect_usage_error "--to" replay "$work/one.csv" --to 127.0.0.1
expect_usage_error "--cidr 10.0.0.0/99.*0-32" replay "$work/one.csv" --to 127.0.0.1:9 --cidr 10.0.0.0/99
expect_usage_error "--cidr 10.0.0.0/x.*0-32" replay "$work/one.csv" --to 127.0.0.1:9 --cidr 10.0.0.0/x
expect_usage_error "--rate.*not a finite number" replay "$work/one.csv" --to 127.0.0.1:9 --rate nan

# analyze
expect_usage_error "--k.*not a finite number" analyze "$work/one.csv" --k nan
expect_usage_error "--threads" analyze "$work/one.csv" --threads -5
expect_usage_error "--window.*out of range" analyze "$work/one.csv" --window 1e300

# A record at the end of time: analyze finishes (any verdict but a hang or a crash).
printf 'src,dst,start_ns,end_ns,bytes,packets,src_port,dst_port,proto,qp,sampling_rate,switch\n' \
  >"$work/end_of_time.csv"
for t in 9223372036854775800 9223372036854775807; do
  printf '10.0.0.1,10.0.0.2,%s,%s,1000,1,1,4791,17,1,1,leaf1\n' "$t" "$t" >>"$work/end_of_time.csv"
done
printf '10.0.0.3,10.0.0.4,1700000000000000000,1700000000001000000,1000,1,1,4791,17,1,1,leaf1\n' \
  >>"$work/end_of_time.csv"
timeout 60 "$bin" analyze "$work/end_of_time.csv" --report "$work/end_of_time.json" \
  >/dev/null 2>"$work/err"
rc=$?
if [ "$rc" -le 2 ]; then
  check ok "analyze of records at INT64_MAX finished (exit $rc)"
else
  check fail "analyze of records at INT64_MAX: exit $rc (124 = hung), $(tail -c 300 "$work/err")"
fi

echo "bad_arguments: $fails failure(s)"
[ "$fails" -eq 0 ]
