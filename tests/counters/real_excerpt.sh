#!/usr/bin/env bash
# Counters mode on real polls (tests/counters/zhejiang_excerpt/README.md): the two job stalls in
# the excerpt are warnings naming their job's servers, and no other finding is a warning or
# critical (single slow iterations there cost a few tens of GPU-seconds: info at most).
# Usage: real_excerpt.sh LLMPRISM WORKDIR
set -euo pipefail
llmprism=$1 dir=$2
data=$(dirname "$0")/zhejiang_excerpt
rm -rf "$dir" && mkdir -p "$dir"
"$llmprism" analyze "$data/counters.csv.zst" --topology "$data/topology_ports.csv" \
  --report "$dir/report.json" >"$dir/summary.txt"
/usr/bin/python3 - "$dir/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
loud = [f for f in r["findings"] if f["severity"] in ("warning", "critical")]
for f in loud:
    print(f["severity"], f["kind"], f["job"], f["start_ns"] // 10**6, f["end_ns"] // 10**6, f["summary"])
def stall_at(ms, hosts):
    return any(f["kind"] == "job_stall" and f["start_ns"] // 10**6 <= ms + 2000 and
               f["end_ns"] // 10**6 >= ms + 10000 and hosts <= set(f["hosts"]) for f in loud)
checks = [
    ("stall at 00:07:51 on H08-20U-GPU-221 and H09-12U-GPU-225",
     stall_at(1716480471000, {"NH-DC-NM129-H08-20U-GPU-221", "NH-DC-NM129-H09-12U-GPU-225"})),
    ("stall at 00:13:05 on G08-28U-GPU-190 and G10-12U-GPU-198",
     stall_at(1716480785000, {"NH-DC-NM129-G08-28U-GPU-190", "NH-DC-NM129-G10-12U-GPU-198"})),
    ("no other warning", len(loud) == 2),
]
for name, ok in checks:
    print(("ok   " if ok else "FAIL ") + name)
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
