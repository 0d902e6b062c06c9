#!/usr/bin/env bash
# serve's HTTP side under hostile clients and its exposure (loopback only, bounded):
#   - tests/service/http_limits.py against a serve with a small pool (2 workers, 6 connections,
#     1 s idle, 1 s request): idle connections do not starve /api/v1/health, the connection cap
#     answers 503, silent and slow clients are closed, /metrics counts them;
#   - query numbers: findings?since=1e300, limit=-1, limit=abc, since=nan -> 400 with a message;
#   - the token from LLMPRISM_TOKEN (not on the command line): 401 without it, 200 with it, 401
#     with a token differing in its last byte; a non-loopback --http without a token warns;
#   - the database file (and its lock) created readable by the owner only (0600);
#   - --exporter-allow: datagrams from other sources refused unread and counted.
# Usage: http_exposure.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/serve_harness.sh"

# 1. Hostile connections.
start_serve "$work/serve1.log" --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --http-threads 2 \
  --http-max-connections 6 --http-idle-s 1 --http-request-s 1 --db "$work/state.sqlite"
if timeout 60 $py "$here/http_limits.py" "$SERVE_HTTP" 2 6 1 1; then
  check ok "http_limits.py"
else
  check fail "http_limits.py"
fi

# 2. Query numbers.
code() { curl -s -o "$work/body" -w '%{http_code}' --max-time 5 "http://127.0.0.1:$SERVE_HTTP$1"; }
for q in "since=1e300" "since=nan" "since=99999999999999999999" "limit=-1" "limit=0" \
         "limit=abc" "limit=99999999999"; do
  c=$(code "/api/v1/findings?$q")
  if [ "$c" = 400 ] && grep -q error "$work/body"; then
    check ok "findings?$q -> 400 $(cat "$work/body")"
  else
    check fail "findings?$q -> $c $(head -c 200 "$work/body")"
  fi
done
c=$(code "/api/v1/findings?since=1700000000&limit=5")
[ "$c" = 200 ] && check ok "findings?since=1700000000&limit=5 -> 200" ||
  check fail "findings?since=1700000000&limit=5 -> $c"

# 3. The database's mode.
mode=$(stat -c %a "$work/state.sqlite")
lock_mode=$(stat -c %a "$work/state.sqlite.lock")
[ "$mode" = 600 ] && [ "$lock_mode" = 600 ] &&
  check ok "database created $mode, its lock $lock_mode" ||
  check fail "database created $mode, its lock $lock_mode (expected 600)"
stop_serve || true

# 4. The token from the environment; a non-loopback bind without one warns.
LLMPRISM_TOKEN=s3cret-token-value start_serve "$work/serve2.log" --ipfix-udp 127.0.0.1:0 \
  --http 127.0.0.1:0
no=$(code /api/v1/jobs)
yes=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
  -H "Authorization: Bearer s3cret-token-value" "http://127.0.0.1:$SERVE_HTTP/api/v1/jobs")
near=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
  -H "Authorization: Bearer s3cret-token-valuf" "http://127.0.0.1:$SERVE_HTTP/api/v1/jobs")
health=$(code /api/v1/health)
[ "$no" = 401 ] && [ "$yes" = 200 ] && [ "$near" = 401 ] && [ "$health" = 200 ] &&
  check ok "LLMPRISM_TOKEN: without 401, with 200, last byte wrong 401, health open 200" ||
  check fail "LLMPRISM_TOKEN: without $no, with $yes, last byte wrong $near, health $health"
if ps -o args= -p "${pids[0]}" | grep -q s3cret; then
  check fail "the token is visible in ps"
else
  check ok "the token is not in ps: $(ps -o args= -p "${pids[0]}" | cut -c1-100)"
fi
stop_serve || true

start_serve "$work/serve3.log" --ipfix-udp 127.0.0.1:0 --http 0.0.0.0:0 \
  --exporter-allow 127.0.0.2
grep -q "warning: --http 0.0.0.0:0 is reachable from other machines, with no token and no TLS" \
  "$work/serve3.log" && check ok "non-loopback --http without a token or TLS: $(grep warning "$work/serve3.log")" ||
  check fail "no warning for --http 0.0.0.0 without a token or TLS: $(cat "$work/serve3.log")"

# 5. The exporter allow-list: datagrams from 127.0.0.1 (not allowed) are refused and counted.
$py - "$SERVE_UDP" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(3):
    s.sendto(b"\x00\x0a\x00\x10" + b"\x00" * 12, ("127.0.0.1", int(sys.argv[1])))
PY
refused=""
for _ in $(seq 50); do
  refused=$(curl -s --max-time 5 "http://127.0.0.1:$SERVE_HTTP/api/v1/ingest" | $py -c \
    'import json,sys; s=json.load(sys.stdin)["sources"][0]; print(s["datagrams_refused"], s["datagrams"], s["records"])')
  [ "${refused%% *}" = 3 ] && break
  sleep 0.1
done
[ "$refused" = "3 0 0" ] &&
  check ok "--exporter-allow 127.0.0.2: 3 datagrams from 127.0.0.1 refused unread (refused, received, records: $refused)" ||
  check fail "--exporter-allow 127.0.0.2: refused, received, records = $refused (expected 3 0 0)"
curl -s --max-time 5 "http://127.0.0.1:$SERVE_HTTP/metrics" | grep -q '^llmprism_datagrams_refused_total{source="udp:127.0.0.1:[0-9]*"} 3$' &&
  check ok "/metrics: llmprism_datagrams_refused_total 3" ||
  check fail "/metrics has no llmprism_datagrams_refused_total 3"

echo "http_exposure: $fails failure(s)"
[ "$fails" -eq 0 ]
