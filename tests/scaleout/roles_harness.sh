# Sourced by the scale-out tests of serve's roles (roles.sh, cluster.sh), after serve_harness.sh
# (py) and with `idle` set to the --idle-flush seconds of the servers:
#   drop DIR FILE     a file appears whole in a watched directory
#   health PORT KEY   one field of /api/v1/health, e.g. '["windows_analysed"]'
#   settle PORT       waits until the windows stop (the idle flush included); at most
#                     settle_s seconds (default 90); `here` is tests/service
#   state PORT OUT    findings, jobs with their step series, and /api/v1/ingest, as JSON
#   count CSV         the records of a flow CSV (its lines less the header)
#   peak_rss_mb PID   a live process's peak resident memory (VmHWM), MB
#   start_reference   one `serve --watch "$work/ref-watch"` with the test's `common` options, the
#                     answer the roles apart must give; sets ref_port and ref_pid
# compare_state.py compares such states.
# drop DIR FILE: a file appears whole in a watched directory.
drop() { cp "$2" "$1/.$(basename "$2")" && mv "$1/.$(basename "$2")" "$1/$(basename "$2")"; }
# health PORT KEY: one field of /api/v1/health.
health() {
  curl -sf "http://127.0.0.1:$1/api/v1/health" | $py -c "import json,sys; print(json.load(sys.stdin)$2)"
}
# settle PORT: waits (at most settle_s, default 90 s) until the served state is final: nothing in
# analysis and the tail analysed (the idle flush's windows reach past the newest record, nothing
# left in the stream), or else no window for idle + 2 s (tests/service/serve_settled.py).
settle() {
  $py "$here/serve_settled.py" "$1" --quiet-s $((idle + 2)) --timeout "${settle_s:-90}"
}
# count CSV: the records of a flow CSV.
count() { echo $(( $(wc -l <"$1") - 1 )); }
# peak_rss_mb PID: VmHWM of a live process, in MB.
peak_rss_mb() { awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$1/status"; }
# start_reference: the reference, one process watching "$work/ref-watch".
start_reference() {
  mkdir -p "$work/ref-watch"
  start_serve "$work/ref.log" --watch "$work/ref-watch" --db "$work/ref.sqlite" "${common[@]}"
  ref_port=$SERVE_HTTP ref_pid=${pids[-1]}
}
# state PORT OUT: findings and jobs (with their step series) as JSON.
state() {
  $py - "$1" "$2" <<'PY'
import json, sys, urllib.request
port, out = sys.argv[1], sys.argv[2]
get = lambda p: json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}{p}"))
jobs = {j["id"]: get(f"/api/v1/jobs/{j['id']}") for j in get("/api/v1/jobs")["jobs"]}
json.dump({"findings": get("/api/v1/findings")["findings"], "jobs": jobs,
           "ingest": get("/api/v1/ingest")}, open(out, "w"), indent=1, sort_keys=True)
PY
}

