#!/usr/bin/env bash
# End-to-end: simulate the tiny scenario, analyse its flow CSV with the topology, score the report.
# Usage: tiny.sh LLMPRISM_BINARY WORK_DIR
set -euo pipefail
bin=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"

"$bin" simulate --scenario tiny --out "$dir/sim"
for f in flows.ipfix flows.csv topology.csv truth.json; do
  [[ -s "$dir/sim/$f" ]] || { echo "FAIL: simulate did not write $f" >&2; exit 1; }
done

"$bin" analyze "$dir/sim/flows.csv" --topology "$dir/sim/topology.csv" \
  --report "$dir/report.json" --timelines > "$dir/summary.txt"
grep -q "Jobs:" "$dir/summary.txt" || { echo "FAIL: no summary on stdout" >&2; exit 1; }
if grep -q $'\x1b' "$dir/summary.txt"; then echo "FAIL: colour codes in piped output" >&2; exit 1; fi

# The IPFIX copy of the same records gives the same report (format detected from content).
"$bin" analyze "$dir/sim/flows.ipfix" --topology "$dir/sim/topology.csv" \
  --report "$dir/report_ipfix.json" --timelines > /dev/null

"$bin" eval --truth "$dir/sim/truth.json" --report "$dir/report.json" --json > "$dir/eval.json"

# Deterministic: the same input gives the same bytes, whatever the thread count.
"$bin" analyze "$dir/sim/flows.ipfix" --topology "$dir/sim/topology.csv" --threads 2 \
  --report "$dir/report_again.json" --timelines > /dev/null
cmp "$dir/report_ipfix.json" "$dir/report_again.json" || { echo "FAIL: report not deterministic" >&2; exit 1; }
# Without --timelines: one summary line per GPU instead of the steps, the rest the same.
"$bin" analyze "$dir/sim/flows.ipfix" --topology "$dir/sim/topology.csv" \
  --report "$dir/report_summary.json" > /dev/null

# The heap asks for huge pages where the system gives them on request, unless the operator says
# otherwise (apps/llmprism/heap_huge_pages.h); --timings says which, from the kernel's own view.
if grep -q '\[madvise\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
  env -u GLIBC_TUNABLES "$bin" analyze "$dir/sim/flows.ipfix" --topology "$dir/sim/topology.csv" \
    --timings > /dev/null 2> "$dir/timings_default.txt"
  grep -q "^memory: heap in huge pages" "$dir/timings_default.txt" ||
    { echo "FAIL: heap not in huge pages by default: $(grep memory: "$dir/timings_default.txt")" >&2; exit 1; }
  GLIBC_TUNABLES=glibc.malloc.hugetlb=0 "$bin" analyze "$dir/sim/flows.ipfix" \
    --topology "$dir/sim/topology.csv" --timings > /dev/null 2> "$dir/timings_small.txt"
  grep -q "^memory: heap in small pages" "$dir/timings_small.txt" ||
    { echo "FAIL: glibc.malloc.hugetlb=0 not kept: $(grep memory: "$dir/timings_small.txt")" >&2; exit 1; }
fi

python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
report = json.load(open(f"{d}/report.json"))
ipfix = json.load(open(f"{d}/report_ipfix.json"))
ev = json.load(open(f"{d}/eval.json"))
for key in ("version", "window", "jobs", "pairs", "timelines", "findings", "input"):
    assert key in report, f"report lacks {key}"
assert report["input"].get("records_read", 0) > 0, report["input"]
summary = json.load(open(f"{d}/report_summary.json"))
assert "timelines" not in summary and "timeline_summaries" not in ipfix, sorted(summary)
assert {k: v for k, v in summary.items() if k != "timeline_summaries"} == \
    {k: v for k, v in ipfix.items() if k != "timelines"}, "summary report differs beyond timelines"
assert [(s["gpu"], s["job"], s["stage"], s["steps"]) for s in summary["timeline_summaries"]] == \
    [(t["gpu"], t["job"], t["stage"], len(t["steps"])) for t in ipfix["timelines"]]
assert len(summary["timeline_summaries"]) > 0
for key in ("jobs", "pairs", "timelines", "findings"):
    assert report[key] == ipfix[key], f"csv and ipfix reports differ in {key}"
frac = ev["jobs_exact_fraction"]
assert frac == 1, f"jobs_exact_fraction = {frac}"
for key in ("pairs_accuracy", "layout_exact_fraction"):
    assert ev[key] == 1, f"{key} = {ev[key]}"
assert ev["step_error_p50"] <= 0.001 and ev["step_error_p99"] <= 0.003, ev
# No alert fatigue on a healthy cluster: nothing of warning severity or above.
loud = [f for f in report["findings"] if f["severity"] != "info"]
assert not loud, f"warnings on a fault-free run: {loud[:3]}"
print(f"ok: {len(report['jobs'])} jobs, {len(report['pairs'])} pairs, jobs_exact_fraction {frac}")
PY
