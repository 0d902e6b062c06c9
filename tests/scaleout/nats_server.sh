# Sourced by the scale-out tests: a real nats-server with JetStream on 127.0.0.1 only.
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
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$NATS_MON/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$NATS_PID" 2>/dev/null || break
    sleep 0.1
  done
  cat "$dir/nats.log"
  echo "FAIL nats-server did not become healthy"
  exit 1
}
nats_stop() {
  local p
  for p in "${NATS_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}
