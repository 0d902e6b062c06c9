#!/usr/bin/env bash
# Counters mode as an operator runs it (docs/counters.md): the counters-ops scenario (steps of
# 2-5 s, a checkpoint every 20 steps on one job, a stall, a slow server) polled every second with a
# 1 s refresh must give no false warning, the stall as a job_stall, the slow server's slowdown as a
# finding of its job, the slow server named (host00001; with it at most host00005, the other stage
# of its pipeline replica, which waits for it and so also arrives last at its own ring), and the
# checkpoint cadence as one iteration_rhythm.
# Usage: ops_eval.sh LLMPRISM EVAL_PY WORKDIR
set -euo pipefail
llmprism=$1 eval_py=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
"$llmprism" simulate --scenario counters-ops --emit counters --poll 1 --refresh 1 --out "$dir" >/dev/null
"$llmprism" analyze "$dir/counters.csv" --topology "$dir/topology_ports.csv" \
  --report "$dir/report.json" >"$dir/summary.txt"
/usr/bin/python3 "$eval_py" "$dir/truth.json" "$dir/report.json" | tee "$dir/score.json"
/usr/bin/python3 - "$dir/score.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
checks = [("all 3 jobs exact", s["jobs_exact"] == 3),
          ("the stall found", s["stalls_found"] == s["stalls"] == 1),
          ("the slow server's slowdown found", s["slow_found"] == 1),
          ("no false warning", s["false_warnings"] == 0),
          ("the slow server named", s["slow_localized"] == 1),
          ("no other server named", set(s["named"]) <= {"host00001", "host00005"}),
          ("the checkpoint cadence as one rhythm", s["rhythms"] == 1)]
for name, ok in checks:
    print(("ok   " if ok else "FAIL ") + name)
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
