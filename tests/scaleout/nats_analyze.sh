#!/usr/bin/env bash
# CTest e2e_nats_analyze: records through NATS JetStream give the report the file gives. A real
# nats-server (JetStream, 127.0.0.1 only); `llmprism simulate --scenario tiny`; `analyze
# flows.ipfix` -> a.json; `llmprism publish flows.ipfix` twice (the second stores nothing: same
# batch ids) and one message that is no record batch; `analyze nats://127.0.0.1:PORT` -> b.json.
# Every part of the reports is equal but the source names; the stream's input counts the same
# records read and the bad message as record_batches_bad. Bounded waits (10 s).
set -euo pipefail
bin=$1
driver=$2
work=$3
py=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"
. "$(dirname "$0")/nats_server.sh"
trap nats_stop EXIT
nats_start "$work"
url=$NATS_URL

"$bin" simulate --scenario tiny --seed 1 --out "$work/sim" >/dev/null
"$bin" analyze "$work/sim/flows.ipfix" --topology "$work/sim/topology.csv" --timelines \
  --report "$work/a.json" >/dev/null
"$bin" publish "$work/sim/flows.ipfix" --nats "$url" --batch 5000 | tee "$work/publish1.txt"
"$bin" publish "$work/sim/flows.ipfix" --nats "$url" --batch 5000 | tee "$work/publish2.txt"
"$driver" garbage "$url" records.junk junk-1
rc=0
"$bin" analyze "$url" --topology "$work/sim/topology.csv" --timelines --report "$work/b.json" \
  > "$work/b.txt" 2> "$work/b.err" || rc=$?
cat "$work/b.err"
# Exit code 1: the report is written, and input was skipped as bad (the message that was no batch).
[ "$rc" = 1 ] || { echo "FAIL analyze of the stream exited $rc, expected 1 (a bad batch skipped)"; exit 1; }

# Other records on the same subject are new batches, not repeats of the first file's.
"$bin" simulate --scenario tiny --seed 2 --out "$work/sim2" >/dev/null
"$bin" publish "$work/sim2/flows.ipfix" --nats "$url" --batch 5000 | tee "$work/publish3.txt"
grep -q "(0 batches already there)" "$work/publish3.txt" \
  || { echo "FAIL another file's batches were taken for repeats"; exit 1; }

$py - "$work" <<'PY'
import json, re, sys
w = sys.argv[1]
a = json.load(open(f"{w}/a.json")); b = json.load(open(f"{w}/b.json"))
fails = []
p1 = open(f"{w}/publish1.txt").read(); p2 = open(f"{w}/publish2.txt").read()
n = a["input"]["records_read"]
if f"published {n} records in 13 batches" not in p1 or "(0 batches already there)" not in p1:
    fails.append("first publish: " + p1.strip())
if "(13 batches already there)" not in p2: fails.append("second publish: " + p2.strip())
for k in sorted(set(a) | set(b)):
    if k in ("sources", "input"): continue
    if a.get(k) != b.get(k): fails.append(f"report part {k} differs")
if b["input"].get("records_read") != n: fails.append(f"stream read {b['input'].get('records_read')} records, file {n}")
if b["input"].get("record_batches") != 13: fails.append(f"record_batches {b['input'].get('record_batches')}")
if b["input"].get("record_batches_bad") != 1: fails.append(f"record_batches_bad {b['input'].get('record_batches_bad')}")
if "skipped" not in open(f"{w}/b.err").read(): fails.append("no warning for the bad message")
if fails:
    print("FAIL " + "; ".join(fails)); sys.exit(1)
print(f"OK {n} records through JetStream (published twice, stored once; one bad message counted "
      f"and skipped): the report equals the file's but for its source")
PY
echo PASS
