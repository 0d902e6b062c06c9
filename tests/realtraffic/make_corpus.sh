#!/usr/bin/env bash
# Builds the real-traffic corpus: for each variant (tests/realtraffic/variants.py), real
# torch.distributed (gloo over TCP) training ranks run in Linux network namespaces joined by one
# bridge (the "switch"); tcpdump captures every frame the bridge forwards; the ranks log their step
# boundaries and build_truth.py turns the logs into truth.json. Writes OUT/<variant>/
# {capture.pcap.zst, topology.csv, truth.json, meta.json}. Needs root (CAP_NET_ADMIN) and
# python3-torch, tcpdump, iproute2, zstd. Everything it creates (namespaces, the bridge, qdiscs,
# processes) is removed on exit, also on failure or interrupt.
# Usage: make_corpus.sh [--out DIR] [--snaplen N] [--zstd-level N] VARIANT... | all
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/corpus
snaplen=96
level=19
variants=()
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --snaplen) snaplen=$2; shift 2 ;;
    --zstd-level) level=$2; shift 2 ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    all) mapfile -t all < <(/usr/bin/python3 "$here/variants.py" list)
         variants+=("${all[@]}"); shift ;;
    *) variants+=("$1"); shift ;;
  esac
done
((${#variants[@]})) || { echo "make_corpus.sh: no variant given (try 'all')" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "make_corpus.sh: needs root (network namespaces)" >&2; exit 2; }
for tool in ip tc tcpdump zstd; do
  command -v $tool >/dev/null ||
    { echo "make_corpus.sh: $tool missing (scripts/setup.sh)" >&2; exit 2; }
done
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
  { echo "make_corpus.sh: python3-torch missing (scripts/setup.sh)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

# One corpus run at a time on a machine: timing is the point, and two runs would share the CPU.
exec 9> /run/lock/llmprism-realtraffic.lock
flock 9

tag=rt$$             # namespace prefix, unique per run
sw=${tag}sw          # the switch namespace, holding the bridge
# setting NAME: a constant of variants.py.
setting() {
  /usr/bin/python3 -c "import sys; sys.path.insert(0, '$here'); import variants; print(variants.$1)"
}
bridge=$(setting BRIDGE)
no_ipv6="net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1"
pids=()
namespaces=()
work=""

cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  for ns in "${namespaces[@]}"; do
    # Processes left inside our namespaces were started by this script.
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  namespaces=()
  [[ -n $work && -d $work ]] && rm -rf "$work"
  return $rc
}
trap cleanup EXIT
trap 'echo "make_corpus.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
trap 'exit 130' INT TERM

log() { echo "[$(date +%T)] $*" >&2; }

# steps_done LOG: number of optimizer steps a rank has logged.
steps_done() {
  local n
  n=$(grep -c '"event": "step"' "$1" 2>/dev/null) || true
  echo "${n:-0}"
}

run_variant() {
  local variant=$1
  local t_begin=$SECONDS
  work=$(mktemp -d /tmp/llmprism-realtraffic.XXXXXX)
  mkdir -p "$work/logs"
  local plan
  plan=$(/usr/bin/python3 "$here/variants.py" plan "$variant")
  log "$variant: namespaces"
  ip netns add "$sw"
  namespaces+=("$sw")
  ip netns exec "$sw" sysctl -qw $no_ipv6
  ip -n "$sw" link set lo up
  ip -n "$sw" link add "$bridge" type bridge
  ip -n "$sw" link set "$bridge" up
  declare -A ns_of ip_of port_of
  local k=0 word name ip kind
  while read -r word name ip kind; do
    [[ $word == host ]] || continue
    local ns=${tag}h$k
    ip netns add "$ns"
    namespaces+=("$ns")
    ip netns exec "$ns" sysctl -qw $no_ipv6
    ip -n "$sw" link add "p$k" type veth peer name eth0 netns "$ns"
    ip -n "$sw" link set "p$k" master "$bridge" up
    ip -n "$ns" addr add "$ip/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ns_of[$name]=$ns
    ip_of[$name]=$ip
    port_of[$name]=p$k
    k=$((k + 1))
  done <<< "$plan"

  log "$variant: tcpdump on $bridge (snaplen $snaplen)"
  ip netns exec "$sw" tcpdump -i "$bridge" -n -s "$snaplen" -B 65536 --time-stamp-precision=nano \
    -w "$work/capture.pcap" 2> "$work/tcpdump.err" &
  local tcpdump_pid=$!
  pids+=("$tcpdump_pid")
  for _ in $(seq 100); do grep -q "listening on" "$work/tcpdump.err" && break; sleep 0.1; done
  grep -q "listening on" "$work/tcpdump.err" || { cat "$work/tcpdump.err" >&2; return 1; }
  local capture_start_ns
  capture_start_ns=$(date +%s%N)

  local storage_pid=""
  while read -r word ip; do
    [[ $word == storage ]] || continue
    local sname
    sname=$(awk -v ip="$ip" '$1 == "host" && $3 == ip {print $2}' <<< "$plan")
    ip netns exec "${ns_of[$sname]}" /usr/bin/python3 "$here/storage_server.py" "$ip" \
      "$(setting STORAGE_PORT)" > "$work/logs/storage.out" 2>&1 &
    storage_pid=$!
    pids+=("$storage_pid")
  done <<< "$plan"
  sleep 0.5

  log "$variant: ranks"
  local rank_pids=() job rank host
  while read -r word job rank host; do
    [[ $word == rank ]] || continue
    ip netns exec "${ns_of[$host]}" env GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 \
      nice -n -20 /usr/bin/python3 "$here/train.py" --variant "$variant" --job "$job" \
      --rank "$rank" --log "$work/logs/$job-$rank.jsonl" > "$work/logs/$job-$rank.out" 2>&1 &
    rank_pids+=($!)
    pids+=($!)
  done <<< "$plan"

  # A degraded link: tc tbf on both directions of one host's veth while job0's rank 0 runs the
  # given steps; the times tc took effect and was removed are measured here.
  local link_host="" link_rate="" link_first="" link_last=""
  read -r _ link_host link_rate link_first link_last < <(grep '^link ' <<< "$plan") || true
  if [[ -n $link_host ]]; then
    local rank0_log=$work/logs/job0-0.jsonl
    while (( $(steps_done "$rank0_log") < link_first )); do
      kill -0 "${rank_pids[0]}" 2>/dev/null || break
      sleep 0.02
    done
    local hns=${ns_of[$link_host]} sport=${port_of[$link_host]}
    local on0 on1 off0 off1
    on0=$(date +%s%N)
    tc -n "$hns" qdisc add dev eth0 root tbf rate "$link_rate" burst 256kb latency 100ms
    tc -n "$sw" qdisc add dev "$sport" root tbf rate "$link_rate" burst 256kb latency 100ms
    on1=$(date +%s%N)
    log "$variant: $link_host link limited to $link_rate"
    while (( $(steps_done "$rank0_log") <= link_last )); do
      kill -0 "${rank_pids[0]}" 2>/dev/null || break
      sleep 0.02
    done
    off0=$(date +%s%N)
    tc -n "$hns" qdisc del dev eth0 root
    tc -n "$sw" qdisc del dev "$sport" root
    off1=$(date +%s%N)
    log "$variant: $link_host link restored"
    printf '{"host": "%s", "ip": "%s", "rate": "%s", "on_ns": [%s, %s], "off_ns": [%s, %s]}\n' \
      "$link_host" "${ip_of[$link_host]}" "$link_rate" "$on0" "$on1" "$off0" "$off1" \
      > "$work/link.json"
  fi

  local failed=0 p
  for p in "${rank_pids[@]}"; do wait "$p" || failed=1; done
  if [[ -n $storage_pid ]]; then kill "$storage_pid"; wait "$storage_pid" || true; fi
  sleep 0.3
  local capture_end_ns
  capture_end_ns=$(date +%s%N)
  kill -INT "$tcpdump_pid"
  wait "$tcpdump_pid" || true
  pids=()
  if ((failed)); then
    for f in "$work"/logs/*.out; do echo "== $f" >&2; tail -20 "$f" >&2; done
    log "$variant: a rank failed"
    return 1
  fi
  log "$variant: $(tr '\n' ' ' < "$work/tcpdump.err")"

  mkdir -p "$out/$variant"
  /usr/bin/python3 "$here/build_truth.py" --variant "$variant" --work "$work" \
    --out "$out/$variant" --capture-start-ns "$capture_start_ns" \
    --capture-end-ns "$capture_end_ns" \
    --snaplen "$snaplen" --seconds $((SECONDS - t_begin)) \
    --command "tests/realtraffic/make_corpus.sh --snaplen $snaplen $variant"
  zstd -q "-$level" -f "$work/capture.pcap" -o "$out/$variant/capture.pcap.zst"
  log "$variant: done in $((SECONDS - t_begin)) s:" \
    "$(du -h "$out/$variant/capture.pcap.zst" | cut -f1) capture"
  cleanup || true
}

for v in "${variants[@]}"; do run_variant "$v"; done
