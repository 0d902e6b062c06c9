# Sourced by the scale-out tests: real nats-servers with JetStream on 127.0.0.1 only, one alone or
# three in a cluster.
#   nats_start DIR   starts it with its store in DIR/store, logging to DIR/nats.log, and waits
#                    (at most 10 s) until /healthz says it and JetStream are ready. Ports are
#                    picked free the first time and kept, so a restart serves the same URL.
#                    Sets NATS_URL and NATS_PID; the caller's EXIT trap should run nats_stop.
#   nats_stop        kill -9 of every server started.
NATS_PIDS=()
nats_free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
nats_start() {
  local dir=$1 bin
  bin=$(command -v nats-server || echo /usr/sbin/nats-server)
  [ -x "$bin" ] || { echo "FAIL nats-server is not installed (scripts/setup.sh installs it)"; exit 1; }
  NATS_PORT=${NATS_PORT:-$(nats_free_port)}
  NATS_MON=${NATS_MON:-$(nats_free_port)}
  NATS_URL="nats://127.0.0.1:$NATS_PORT"
  "$bin" -js -a 127.0.0.1 -p "$NATS_PORT" -m "$NATS_MON" -sd "$dir/store" >>"$dir/nats.log" 2>&1 &
  NATS_PID=$!
  NATS_PIDS+=("$NATS_PID")
  nats_wait_healthy "$NATS_MON" "$NATS_PID" "$dir/nats.log" 100 nats-server
}
# nats_wait_healthy MON_PORT PID LOG TRIES WHAT: /healthz (JetStream included) answers within
# TRIES tenths of a second while the process lives, else its log and FAIL.
nats_wait_healthy() {
  for _ in $(seq "$4"); do
    curl -sf "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  cat "$3"
  echo "FAIL $5 did not become healthy"
  exit 1
}
nats_stop() {
  local p
  for p in "${NATS_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}

# A 3-node cluster on loopback (JetStream with R3 streams):
#   nats_cluster_start DIR   starts nodes 1-3 (stores in DIR/node<i>/store, logs DIR/node<i>.log)
#                            and waits (at most 30 s) until every one says JetStream is ready.
#                            Sets NATS_URLS (the three client URLs, comma-separated) and
#                            NATS_NODE_PID[i]. Ports are picked free once and kept.
#   nats_node_start DIR I    (re)starts node I on its ports and store, and waits for it.
declare -A NATS_NODE_PID NATS_NODE_PORT NATS_NODE_MON NATS_NODE_ROUTE
nats_node_start() {
  local dir=$1 i=$2 bin routes=() j
  bin=$(command -v nats-server || echo /usr/sbin/nats-server)
  [ -x "$bin" ] || { echo "FAIL nats-server is not installed (scripts/setup.sh installs it)"; exit 1; }
  for j in 1 2 3; do
    [ "$j" = "$i" ] || routes+=("nats://127.0.0.1:${NATS_NODE_ROUTE[$j]}")
  done
  mkdir -p "$dir/node$i"
  "$bin" -js -a 127.0.0.1 -p "${NATS_NODE_PORT[$i]}" -m "${NATS_NODE_MON[$i]}" \
    -sd "$dir/node$i/store" -n "node$i" --cluster_name llmprism \
    --cluster "nats://127.0.0.1:${NATS_NODE_ROUTE[$i]}" --routes "$(IFS=,; echo "${routes[*]}")" \
    >>"$dir/node$i.log" 2>&1 &
  NATS_NODE_PID[$i]=$!
  NATS_PIDS+=("$!")
}
nats_node_wait() {
  local dir=$1 i=$2
  nats_wait_healthy "${NATS_NODE_MON[$i]}" "${NATS_NODE_PID[$i]}" "$dir/node$i.log" 300 \
    "nats node $i"
}
nats_cluster_start() {
  local dir=$1 i urls=()
  for i in 1 2 3; do
    NATS_NODE_PORT[$i]=${NATS_NODE_PORT[$i]:-$(nats_free_port)}
    NATS_NODE_MON[$i]=${NATS_NODE_MON[$i]:-$(nats_free_port)}
    NATS_NODE_ROUTE[$i]=${NATS_NODE_ROUTE[$i]:-$(nats_free_port)}
    urls+=("nats://127.0.0.1:${NATS_NODE_PORT[$i]}")
  done
  NATS_URLS=$(IFS=,; echo "${urls[*]}")
  for i in 1 2 3; do nats_node_start "$dir" $i; done
  for i in 1 2 3; do nats_node_wait "$dir" $i; done
}
