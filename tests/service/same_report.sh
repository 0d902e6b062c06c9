#!/usr/bin/env bash
# `analyze` and `serve` analyse a window through one pipeline (pipeline/analyze_window.h): the
# same records must give the same report, byte for byte, whichever path they take.
#   - the records: the `tiny` scenario's flow CSV, sorted by start and shifted so that the first
#     record starts on a step boundary; then serve's first window (step-aligned) and analyze's
#     window (aligned at the first record) are the same interval, and serve's window buffer, which
#     hands records over in start order, delivers them in the file's order (ties between records
#     with equal start and end are ordered by their endpoints' first appearance, so the order
#     records arrive in is part of "the same records");
#   - the analyze path: `llmprism analyze FILE --report` (one window holding every record);
#   - the serve path: the file dropped into `serve --watch DIR` (reader, record queue, window
#     buffer, Tracker), its window's report read from GET /api/v1/report.
# Normalised, and only this: the "sources" list (analyze names the file, serve its window: the
# record counts must be equal) and job ids (the tracker numbers jobs itself: mapped by GPU set).
# Everything else — windows, jobs, layouts, pairs with their evidence, timelines, findings, the
# input counters (records_read, records_non_gpu) — must be identical. Also checked: the live
# dashboard's report counts the window's records (records_read, shown as "recognised from N
# switch flow records"), which it once showed as 0.
# Usage: same_report.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1 work=$2
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work/watch"
. "$(dirname "$0")/serve_ready.sh"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

"$bin" simulate --scenario "${SCENARIO:-tiny}" --seed 1 --out "$work/sim" >/dev/null
step=10
$py - "$work/sim/flows.csv" "$work/flows.csv" "$step" <<'PY'
import csv, sys
src, dst, step = sys.argv[1], sys.argv[2], int(sys.argv[3]) * 10**9
with open(src, newline="") as f:
    rows = list(csv.DictReader(f))
    fields = list(rows[0].keys())
rows.sort(key=lambda r: int(r["start_ns"]))  # stable: ties keep the file's order
t0 = int(rows[0]["start_ns"])
shift = (-t0) % step
for r in rows:
    r["start_ns"] = str(int(r["start_ns"]) + shift)
    r["end_ns"] = str(int(r["end_ns"]) + shift)
with open(dst, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    w.writerows(rows)
span = (int(max(r["end_ns"] for r in rows)) - int(rows[0]["start_ns"])) / 1e9
print(f"{len(rows)} records over {span:.1f} s, shifted by {shift / 1e9:.3f} s")
PY
window=120  # a whole multiple of the step, longer than the scenario: one window

"$bin" analyze "$work/flows.csv" --topology "$work/sim/topology.csv" --window $window \
  --report "$work/analyze.json" --timelines >/dev/null

"$bin" serve --watch "$work/watch" --http 127.0.0.1:0 --window $window --step $step \
  --idle-flush 1 --topology "$work/sim/topology.csv" --ready-file "$work/ready.json" \
  2>"$work/serve.log" &
pids+=($!)
wait_serve_ready "$work/ready.json" "$work/serve.log"
cp "$work/flows.csv" "$work/watch/.flows.csv" && mv "$work/watch/.flows.csv" "$work/watch/flows.csv"
api() { curl -sf "http://127.0.0.1:$SERVE_HTTP$1"; }
for _ in $(seq 300); do
  n=$(api /api/v1/health | $py -c 'import json,sys; print(json.load(sys.stdin)["windows_analysed"])')
  [ "$n" -ge 1 ] && break
  sleep 0.1
done
[ "$n" -ge 1 ] || { cat "$work/serve.log"; echo "FAIL serve analysed no window"; exit 1; }
api /api/v1/report >"$work/serve.json"
api /api/v1/dashboard >"$work/dashboard.json"
api /api/v1/health >"$work/health.json"

$py - "$work" <<'PY'
import json, re, sys
work = sys.argv[1]
a = json.load(open(f"{work}/analyze.json"))
s = json.load(open(f"{work}/serve.json"))
health = json.load(open(f"{work}/health.json"))
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok

check(health["windows_analysed"] == 1, f"serve analysed one window ({health['windows_analysed']})")
ra = sum(x["records"] for x in a["sources"])
rs = sum(x["records"] for x in s["sources"])
check(ra == rs and ra > 0, f"both paths analysed {ra} / {rs} records")
a["sources"] = s["sources"] = "(normalised: analyze names the file, serve its window)"

# Job ids: the tracker derives its own (docs/api.md, Ids); map serve's to analyze's by GPU set.
by_gpus = {tuple(j["gpus"]): j["id"] for j in a["jobs"]}
rename = {}
for j in s["jobs"]:
    rename[j["id"]] = by_gpus.get(tuple(j["gpus"]), "unmatched:" + j["id"])
def ren(v):
    return rename.get(v, v) if isinstance(v, str) else v
for j in s["jobs"]:
    j["id"] = ren(j["id"])
for key in ("pairs", "timelines", "findings"):
    for x in s[key]:
        if "job" in x:
            x["job"] = ren(x["job"])
# Finding texts name their job too (the tracker puts its id there).
for f in s["findings"]:
    f["summary"] = re.sub(r"\bjob-[0-9a-f]{12}(-[0-9]+)?\b", lambda m: ren(m.group(0)), f["summary"])
check(len(a["jobs"]) > 0, f"{len(a['jobs'])} jobs, {len(a['findings'])} findings, "
      f"{len(a['timelines'])} timelines, {len(a['pairs'])} pairs")

da = json.dumps(a, sort_keys=True, indent=1).splitlines()
ds = json.dumps(s, sort_keys=True, indent=1).splitlines()
same = da == ds
if not same:
    import difflib
    diff = list(difflib.unified_diff(da, ds, "analyze", "serve", n=2, lineterm=""))
    print("\n".join(diff[:60]))
check(same, f"reports identical after normalising sources and job ids ({len(da)} lines)")
check(a["input"].get("records_read") == ra, f"input.records_read = {a['input'].get('records_read')}")

d = json.load(open(f"{work}/dashboard.json"))["report"]
read = next((c["value"] for c in d["input"] if c["name"] == "records_read"), 0)
check(read == rs, f"dashboard: recognised from {read} switch flow records (window holds {rs})")
sys.exit(1 if fails else 0)
PY
echo "same_report: all checks passed"
