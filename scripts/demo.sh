#!/usr/bin/env bash
# The main job on its embedded default: simulate the `faults` scenario (2,880 GPUs, five jobs, a
# straggler GPU, a degraded spine and a congested link), analyse its flow records as an operator
# would (no ground truth), print the diagnosis, write the report, then score it against the truth.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ]; then bash scripts/setup.sh; else sudo bash scripts/setup.sh; fi
bash scripts/build.sh
out=${1:-out/demo}
bin=build/apps/llmprism/llmprism
mkdir -p "$out"
echo "== simulate: $out"
"$bin" simulate --scenario faults --seed 1 --out "$out"
echo "== analyze: flows + topology only"
"$bin" analyze "$out/flows.ipfix" --topology "$out/topology.csv" --report "$out/report.json" --timelines \
  --html "$out/report.html"
echo "== eval: the report against the simulator's truth"
"$bin" eval --truth "$out/truth.json" --report "$out/report.json"
echo "report: $out/report.json and $out/report.html"
