#!/usr/bin/env bash
# A record claiming to last years among good ones: analyze counts it as record_bad_duration,
# skips it before the windows are cut, analyses the others as if it were absent, and stays within
# 1 GB of address space and 120 s. With --max-record-s raised to its ceiling (1e9 s, 31 years),
# a record of that length inside a window is analysed within the same bounds: nothing in the
# analysis is sized by a record's span.
# Usage: long_record.sh LLMPRISM_BINARY WORK_DIR
set -uo pipefail
bin=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" simulate --scenario tiny --out "$dir/sim" > /dev/null || fail "simulate"
clean=$dir/sim/flows.csv
# with_record OUT START END: the clean rows and one more, a copy of the first row with these times.
with_record() {
  /usr/bin/python3 - "$clean" "$@" <<'PY'
import csv, sys
src, out, start, end = sys.argv[1:5]
rows = list(csv.reader(open(src)))
extra = dict(zip(rows[0], rows[1]), start_ns=start, end_ns=end)
with open(out, "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerows(rows)
    w.writerow([extra[c] for c in rows[0]])
PY
}
first_start=$(/usr/bin/python3 -c 'import csv,sys; print(min(int(r["start_ns"]) for r in csv.DictReader(open(sys.argv[1]))))' "$clean")

# The clean file's report, to compare with.
"$bin" analyze "$clean" --topology "$dir/sim/topology.csv" --report "$dir/clean.json" --timelines \
  > /dev/null 2> "$dir/clean.err" || fail "analyze of the clean file: $(cat "$dir/clean.err")"

# The same rows and one more: start_ns -5, ending with the others (about 56 years).
with_record "$dir/years.csv" -5 $((first_start + 1000000)) || fail "writing years.csv"
# bounded: 1 GB of address space, 120 s (the record once made the bandwidth rule bin its span)
( ulimit -v 1048576; timeout 120 "$bin" analyze "$dir/years.csv" \
    --topology "$dir/sim/topology.csv" --report "$dir/years.json" --timelines > "$dir/years.txt" \
    2> "$dir/years.err" )
rc=$?
[[ $rc == 1 ]] || fail "analyze of years.csv exited $rc, want 1 (records skipped): $(cat "$dir/years.err")"
grep -q "record_bad_duration 1:" "$dir/years.txt" ||
  fail "summary does not show record_bad_duration 1: $(cat "$dir/years.txt")"

# Raised limit: a record from the first start lasting 1e9 s is kept and analysed.
with_record "$dir/long.csv" "$first_start" $((first_start + 1000000000000000000)) ||
  fail "writing long.csv"
( ulimit -v 1048576; timeout 120 "$bin" analyze "$dir/long.csv" --max-record-s 1e9 \
    --topology "$dir/sim/topology.csv" --report "$dir/long.json" > /dev/null \
    2> "$dir/long.err" )
rc=$?
[[ $rc == 0 ]] || fail "analyze of long.csv with --max-record-s 1e9 exited $rc, want 0: $(cat "$dir/long.err")"

# Refused values of the flag.
"$bin" analyze "$clean" --max-record-s 0 > /dev/null 2>&1
[[ $? == 2 ]] || fail "--max-record-s 0 accepted"
"$bin" analyze "$clean" --max-record-s nan > /dev/null 2>&1
[[ $? == 2 ]] || fail "--max-record-s nan accepted"

/usr/bin/python3 - "$dir" <<'PY' || exit 1
import json, sys
d = sys.argv[1]
clean = json.load(open(f"{d}/clean.json"))
years = json.load(open(f"{d}/years.json"))
long_ = json.load(open(f"{d}/long.json"))
assert years["input"].get("record_bad_duration") == 1, years["input"]
assert "record_bad_duration" not in clean["input"], clean["input"]
assert "record_bad_duration" not in long_["input"], long_["input"]
# Read, then skipped: one more read than the clean file.
assert years["input"]["records_read"] == clean["input"]["records_read"] + 1, \
    (years["input"], clean["input"])
# The other records analysed exactly as without the bad one.
for key in ("window", "jobs", "pairs", "timelines", "findings"):
    assert years[key] == clean[key], f"{key} differs from the clean file's report"
assert len(clean["jobs"]) >= 1, clean["jobs"]
assert len(long_["jobs"]) >= 1, long_["jobs"]
print(f"ok: record_bad_duration 1, {years['input']['records_read']} records read, "
      f"{len(years['jobs'])} job(s) as in the clean file")
PY
