# Sourced by the service tests: waits (bounded, 10 s) for `serve --ready-file READY` and reads
# the ports it bound into SERVE_HTTP and SERVE_UDP (its first UDP source; empty without one). Fails with the
# server's log when it did not come up.
#   wait_serve_ready READY LOG
wait_serve_ready() {
  local ready=$1 log=$2
  for _ in $(seq 100); do [ -f "$ready" ] && break; sleep 0.1; done
  [ -f "$ready" ] || { cat "$log"; echo "FAIL serve did not start"; exit 1; }
  SERVE_HTTP=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['http'])" "$ready")
  SERVE_UDP=$(/usr/bin/python3 -c "import json,sys; u=json.load(open(sys.argv[1]))['udp']; print(u[0] if u else '')" "$ready")
}
