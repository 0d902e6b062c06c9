#!/usr/bin/env bash
# The SQLite store of `serve` under trouble. Traffic: synthetic IPFIX streams (ipfix_send.py),
# each host group a new set of jobs, so every phase brings new jobs and findings to write.
#   1. two serve processes on one --db: the second is refused at start (exit 2) naming the first
#      one's pid;
#   2. a corrupt database (garbage bytes): refused at start (exit 2) with a clear message, the
#      file left exactly as it was;
#   3. the database locked by another process (a sqlite3 client holding BEGIN EXCLUSIVE): window
#      writes fail, /api/v1/health is "degraded" naming the store and what is not yet saved, the
#      API keeps serving the new findings; when the lock goes the held changes are written
#      (health "ok", nothing unsaved); then kill -9 and restart: every finding served before the
#      kill is served after;
#   4. a full disk (the database on a 2 MB tmpfs, filled up): the same, recovery when space
#      returns, and no committed finding lost across kill -9. Needs mount(8) rights (root in CI);
#      skipped with a message otherwise.
# Usage: store_faults.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1 work=$2
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
. "$here/serve_ready.sh"
pids=()
mounted=""
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "$mounted" ] && umount "$mounted" 2>/dev/null || true
}
trap cleanup EXIT
. "$(dirname "$0")/checks.sh"

start_serve() {  # start_serve DB TAG: sets SERVE_PID, SERVE_HTTP, SERVE_UDP
  rm -f "$work/ready.json"
  "$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --window 10 --step 5 --reorder 1 \
    --idle-flush 1 --db "$1" --ready-file "$work/ready.json" 2>"$work/serve-$2.log" &
  SERVE_PID=$!
  pids+=("$SERVE_PID")
  wait_serve_ready "$work/ready.json" "$work/serve-$2.log"
}
api() { curl -sf "http://127.0.0.1:$SERVE_HTTP$1"; }
send() {  # send FROM_S TO_S NET
  PYTHONPATH=$here $py "$here/ipfix_send.py" "$SERVE_UDP" --from-s "$1" --to-s "$2" --net "$3" \
    --speed 20 >/dev/null
}
health() { api /api/v1/health | $py -c "import json,sys; h=json.load(sys.stdin); $1"; }
# Waits (bounded, 30 s) until the python condition on the health document `h` holds.
wait_health() {
  for _ in $(seq 150); do
    if health "sys.exit(0 if ($1) else 1)"; then return 0; fi
    sleep 0.2
  done
  return 1
}
finding_ids() { api "/api/v1/findings?limit=100000" | $py -c '
import json, sys
print(" ".join(str(f["id"]) for f in json.load(sys.stdin)["findings"]))'; }
# every id in $1 is in $2
subset() { $py -c 'import sys; a, b = set(sys.argv[1].split()), set(sys.argv[2].split()); sys.exit(0 if a <= b else 1)' "$1" "$2"; }

# --- 1. one database, one process -------------------------------------------------------------
db=$work/state.sqlite
start_serve "$db" a
first=$SERVE_PID first_http=$SERVE_HTTP
rc=0
"$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --db "$db" 2>"$work/second.log" || rc=$?
if [ $rc = 2 ] && grep -q "in use by another llmprism serve (pid $first" "$work/second.log"; then
  check ok "second serve on the same --db refused (exit 2): $(tail -1 "$work/second.log")"
else
  check FAIL "second serve on the same --db: exit $rc: $(cat "$work/second.log")"
fi

# --- 2. a corrupt database ----------------------------------------------------------------------
head -c 65536 /dev/urandom >"$work/corrupt.sqlite"
cp "$work/corrupt.sqlite" "$work/corrupt.orig"
rc=0
"$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --db "$work/corrupt.sqlite" \
  2>"$work/corrupt.log" || rc=$?
if [ $rc = 2 ] && grep -q "not a usable llmprism database" "$work/corrupt.log" &&
   cmp -s "$work/corrupt.sqlite" "$work/corrupt.orig"; then
  check ok "corrupt database refused (exit 2), file untouched: $(tail -1 "$work/corrupt.log")"
else
  check FAIL "corrupt database: exit $rc: $(cat "$work/corrupt.log")"
fi

# --- 3. locked by another process ---------------------------------------------------------------
send 0 20 0
wait_health 'h["jobs"] >= 1 and h["analysing"] is None and h["store"]["ok"]' ||
  check FAIL "no job after the first stream"
committed=$(finding_ids)
# Another process takes the write lock and keeps it until told to let go.
$py - "$db" "$work/unlock" <<'PY' &
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[2] + ".held", "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
c.execute("ROLLBACK")
PY
locker=$!
pids+=("$locker")
for _ in $(seq 100); do [ -f "$work/unlock.held" ] && break; sleep 0.05; done
send 20 40 1  # new jobs: new findings to write
if wait_health 'h["status"] == "degraded" and not h["store"]["ok"] and h["store"]["unsaved_findings"] > 0'; then
  check ok "database locked: $(health 'print(h["reasons"][0])')"
else
  check FAIL "database locked: health $(api /api/v1/health)"
fi
during=$(finding_ids)
subset "$committed" "$during" && [ "$during" != "$committed" ] &&
  check ok "the API serves the new findings meanwhile ($(echo $during | wc -w) findings)" ||
  check FAIL "findings while locked: before '$committed', during '$during'"
touch "$work/unlock"
wait "$locker" || true
if wait_health 'h["store"]["ok"] and h["store"]["unsaved_findings"] == 0 and h["status"] == "ok"'; then
  check ok "lock released: written, health ok ($(grep -c "writable again" "$work/serve-a.log") recovery logged)"
else
  check FAIL "lock released: health $(api /api/v1/health)"
fi
before_kill=$(finding_ids)
kill -9 "$first"; wait "$first" 2>/dev/null || true
start_serve "$db" b
after_kill=$(finding_ids)
subset "$before_kill" "$after_kill" &&
  check ok "kill -9 and restart: all $(echo $before_kill | wc -w) findings served before are served after" ||
  check FAIL "kill -9: before '$before_kill', after '$after_kill'"
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || check FAIL "SIGTERM exit code"

# --- 4. a full disk ---------------------------------------------------------------------------
small=$work/small
mkdir -p "$small"
if mount -t tmpfs -o size=2m tmpfs "$small" 2>"$work/mount.log"; then
  mounted=$small
  db=$small/state.sqlite
  start_serve "$db" c
  send 0 20 0
  wait_health 'h["jobs"] >= 1 and h["analysing"] is None and h["store"]["ok"]' ||
    check FAIL "no job after the first stream (full disk)"
  committed=$(finding_ids)
  dd if=/dev/zero of="$small/fill" bs=16k 2>/dev/null || true  # until the disk is full
  send 20 40 1
  if wait_health 'not h["store"]["ok"] and h["status"] == "degraded" and "full" in h["store"]["error"]'; then
    check ok "disk full: $(health 'print(h["reasons"][0])')"
  else
    check FAIL "disk full: health $(api /api/v1/health)"
  fi
  rm -f "$small/fill"
  if wait_health 'h["store"]["ok"] and h["store"]["unsaved_findings"] == 0 and h["status"] == "ok"'; then
    check ok "space returned: written, health ok"
  else
    check FAIL "space returned: health $(api /api/v1/health)"
  fi
  before_kill=$(finding_ids)
  subset "$committed" "$before_kill" || check FAIL "findings lost while the disk was full"
  kill -9 "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
  start_serve "$db" d
  after_kill=$(finding_ids)
  subset "$before_kill" "$after_kill" &&
    check ok "kill -9 and restart: all $(echo $before_kill | wc -w) findings served before are served after" ||
    check FAIL "kill -9 (full disk): before '$before_kill', after '$after_kill'"
  kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || check FAIL "SIGTERM exit code"
else
  echo "skip full disk: cannot mount a tmpfs here ($(cat "$work/mount.log"))"
fi

[ $fails = 0 ] && echo "store_faults: all checks passed" || exit 1
