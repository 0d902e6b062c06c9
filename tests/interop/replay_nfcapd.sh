#!/bin/bash
# llmprism replay into nfcapd (nfdump's collector) on a free loopback port: nfcapd stores every
# record replay sent, and counts no IPFIX sequence failure — each message's sequence number is
# the data records sent before it on the stream (RFC 7011 3.1), also when preloaded datagrams are
# sent again with --repeat.
# Usage: replay_nfcapd.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
for tool in nfcapd nfdump; do
  command -v $tool >/dev/null || { echo "FAIL: $tool missing (run scripts/setup.sh)" >&2; exit 1; }
done
nf_pid=
trap '[[ -n $nf_pid ]] && kill $nf_pid 2>/dev/null || true' EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

"$bin" simulate --scenario tiny --seed 1 --duration 10 --out "$dir/sim" > /dev/null

# replay_into TAG ARGS...: replays the scenario into a fresh nfcapd; prints "sent stored failures".
replay_into() {
  local tag=$1
  shift
  local port
  port=$(free_port)
  mkdir -p "$dir/$tag"
  # A socket buffer of 8 MB: on a loaded machine nfcapd may not be scheduled for a while, and
  # the kernel's default buffer then overflows at 100k records/s (records lost before nfcapd).
  nfcapd -b 127.0.0.1 -p "$port" -B 8000000 -w "$dir/$tag" -t 60 > "$dir/$tag.nfcapd.log" 2>&1 &
  nf_pid=$!
  # Until nfcapd has bound its port (bounded): datagrams sent before are refused, not stored.
  for _ in $(seq 100); do
    ss -Hln -u "sport = :$port" | grep -q . && break
    sleep 0.1
  done
  "$bin" replay "$dir/sim/flows.ipfix" --to "127.0.0.1:$port" --rate 100000 "$@" \
    > "$dir/$tag.replay.log" 2>&1
  sleep 1
  kill -TERM $nf_pid
  wait $nf_pid || true
  nf_pid=
  local sent stored failures
  sent=$(sed -n 's/^replay: \([0-9]*\) records.*/\1/p' "$dir/$tag.replay.log")
  stored=$(nfdump -I -R "$dir/$tag" | sed -n 's/^Flows: //p')
  failures=$(nfdump -I -R "$dir/$tag" | sed -n 's/^Sequence failures: //p')
  echo "$sent $stored $failures"
}

status=0
for run in "plain" "preload --preload --repeat 2"; do
  read -r tag args <<< "$run"
  # shellcheck disable=SC2086
  read -r sent stored failures <<< "$(replay_into "$tag" $args)"
  echo "$tag: replay sent $sent records, nfcapd stored $stored, sequence failures $failures"
  if [[ -z $sent || $sent -eq 0 || $stored != "$sent" || $failures != 0 ]]; then
    echo "FAIL: $tag" >&2
    status=1
  fi
done
exit $status
