#!/usr/bin/env bash
# The simulator's packets read back like its flow records: `simulate --emit pcap` (RoCE WRITEs
# segmented at 4096 B, cut at a 128-byte snaplen, plain and ERSPAN II / III wrapped), then
# `analyze` on the capture and on the flow CSV must give the same jobs, pairs (labels) and
# timelines, and the same record count and byte total.
# Usage: sim_pcap.sh LLMPRISM_BINARY WORK_DIR
set -euo pipefail
bin=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"

for erspan in 0 2 3; do
  out="$dir/e$erspan"
  "$bin" simulate --scenario pcap-tiny --out "$out" --emit pcap --erspan "$erspan" --snaplen 128 \
    > "$out.sim.txt"
  [[ -s "$out/flows.pcap" ]] || { echo "FAIL: no flows.pcap (erspan $erspan)" >&2; exit 1; }
  [[ $erspan == 0 ]] && "$bin" analyze "$out/flows.csv" --topology "$out/topology.csv" \
    --report "$dir/report_csv.json" --timelines > /dev/null
  "$bin" analyze "$out/flows.pcap" --topology "$out/topology.csv" \
    --report "$dir/report_pcap_e$erspan.json" --timelines > /dev/null
  rm -f "$out/flows.pcap" "$out/flows.ipfix"  # 70 MB; keep the directory small
done

python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
csv = json.load(open(f"{d}/report_csv.json"))
assert csv["jobs"], "no job recognised from the flow CSV"
for e in (0, 2, 3):
    pcap = json.load(open(f"{d}/report_pcap_e{e}.json"))
    for key in ("jobs", "pairs", "timelines"):
        assert pcap[key] == csv[key], f"erspan {e}: pcap and csv reports differ in {key}"
    n_csv, n_pcap = csv["input"]["records_read"], pcap["input"]["records_read"]
    assert n_csv == n_pcap, f"erspan {e}: {n_pcap} records from the capture, {n_csv} in the CSV"
    bad = {k: v for k, v in pcap["input"].items()
           if k.startswith(("packet_", "roce_bad", "pcap_file"))}
    assert not bad, f"erspan {e}: skipped packets {bad}"
    if e:
        assert pcap["input"]["erspan_packets"] == pcap["input"]["pcap_packets"], pcap["input"]
    print(f"ok erspan={e}: {n_pcap} records from {pcap['input']['pcap_packets']} packets, "
          f"{len(pcap['jobs'])} jobs, {len(pcap['pairs'])} pairs: equal to the CSV's")
PY
