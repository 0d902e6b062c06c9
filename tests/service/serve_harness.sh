# Sourced by the service tests that start `llmprism serve` themselves, after they set `bin` (the
# llmprism binary), `work` (their scratch directory) and `here` (tests/service): makes `work`
# afresh, brings in check()/fails (checks.sh) and wait_serve_ready (serve_ready.sh), and kills
# every server still running when the test exits, however it exits.
#   start_serve LOG ARGS...  runs `serve ARGS --ready-file $work/ready.json` in the background
#                            (stderr to LOG, pid appended to pids) and waits until it is ready:
#                            SERVE_HTTP, SERVE_UDP set
#   stop_serve               SIGTERM to the first server in pids, waits for it; its exit code
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
. "$here/serve_ready.sh"
. "$here/checks.sh"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

start_serve() {
  local log=$1
  shift
  rm -f "$work/ready.json"
  "$bin" serve "$@" --ready-file "$work/ready.json" 2>"$log" &
  pids+=($!)
  wait_serve_ready "$work/ready.json" "$log"
}

stop_serve() {
  local rc=0
  kill -TERM "${pids[0]}"
  wait "${pids[0]}" || rc=$?
  pids=()
  return $rc
}
