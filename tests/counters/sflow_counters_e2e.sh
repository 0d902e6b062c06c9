#!/usr/bin/env bash
# Counters mode on sFlow counter samples (docs/counters.md "sFlow counter samples"): the counters
# scenario's export (simulate --emit counters,sflow: the same port polls as counters.csv, sent as
# sFlow counter samples by each leaf's agent, 1 s apart with a 1 s refresh) read by
# `analyze --sflow-counters sflow.pcap --topology topology_sflow_ports.csv` must find the scenario's
# three jobs with their exact host sets and periods within 2% of the truth, the stall, no false
# warning, and agree with the CSV path (same jobs, periods within 0.5%).
# Usage: sflow_counters_e2e.sh LLMPRISM EVAL_PY WORKDIR
set -euo pipefail
llmprism=$1 eval_py=$2 dir=$3
py=/usr/bin/python3
rm -rf "$dir" && mkdir -p "$dir"
"$llmprism" simulate --scenario counters --duration 300 --emit counters,sflow --sampling 100000 \
  --poll 1 --refresh 1 --out "$dir/sim" >/dev/null
"$llmprism" analyze "$dir/sim/counters.csv" --topology "$dir/sim/topology_ports.csv" \
  --report "$dir/csv.json" >"$dir/csv.txt"
"$llmprism" analyze --sflow-counters "$dir/sim/sflow.pcap" \
  --topology "$dir/sim/topology_sflow_ports.csv" --report "$dir/sflow.json" >"$dir/sflow.txt"
$py "$eval_py" "$dir/sim/truth.json" "$dir/csv.json" >"$dir/csv_score.json"
$py "$eval_py" "$dir/sim/truth.json" "$dir/sflow.json" >"$dir/sflow_score.json"
echo "csv:   $(cat "$dir/csv_score.json")"
echo "sflow: $(cat "$dir/sflow_score.json")"
$py - "$dir/csv.json" "$dir/sflow.json" "$dir/csv_score.json" "$dir/sflow_score.json" <<'PY'
import json, sys
a, b, sa, sb = (json.load(open(p)) for p in sys.argv[1:5])
inp = b["input"]
checks = [
    ("sflow report is counters mode", b["mode"] == "counters"),
    ("counter samples decoded", inp.get("sflow_interface_counters", 0) > 0
     and inp.get("counters_rows", 0) > 0),
    ("nothing bad", not any(k in inp for k in ("sflow_bad_sample", "sflow_bad_datagram",
                                                 "counters_out_of_order"))),
    ("all 3 jobs exact", sb["jobs_truth"] == 3 and sb["jobs_exact"] == 3),
    ("periods within 2% of the truth", sb["period_err_max"] is not None
     and sb["period_err_max"] < 0.02),
    ("the stall found", sb["stalls"] == 1 and sb["stalls_found"] == 1),
    ("no false warning", sb["false_warnings"] == 0),
    ("same job host sets as the CSV path",
     sorted(sorted(j["hosts"]) for j in a["jobs"]) == sorted(sorted(j["hosts"]) for j in b["jobs"])),
]
pa = sorted(j["period_s"] for j in a["counters"]["jobs"])
pb = sorted(j["period_s"] for j in b["counters"]["jobs"])
checks.append(("periods within 0.5% of the CSV path's " + str([round(p, 3) for p in pa]),
               len(pa) == len(pb) and all(abs(x - y) <= 0.005 * x for x, y in zip(pa, pb))))
print("sflow periods", [round(p, 3) for p in pb], "polls", b["counters"]["polls"],
      "csv polls", a["counters"]["polls"])
for name, ok in checks:
    print(("ok   " if ok else "FAIL ") + name)
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
