#!/usr/bin/env python3
"""Port counters CSV (deltas, the shared dataset's layout) -> OpenMetrics text with cumulative
counters, for `promtool tsdb create-blocks-from openmetrics`. Usage: to_openmetrics.py IN.csv OUT.om
Metric families port_in_bytes / port_out_bytes (samples *_total), labels instance (switch), ifName."""
import csv, sys
from collections import defaultdict

rows = defaultdict(list)
with open(sys.argv[1]) as f:
    for r in csv.DictReader(f):
        rows[(r["switch"], r["port"])].append((int(r["ts_ms"]), int(r["in_bytes"]), int(r["out_bytes"])))
with open(sys.argv[2], "w") as out:
    for fam, col in (("port_in_bytes", 1), ("port_out_bytes", 2)):
        out.write(f"# TYPE {fam} counter\n")
        for (sw, port), polls in sorted(rows.items()):
            total = 0
            for p in sorted(polls):
                total += p[col]
                out.write(f'{fam}_total{{instance="{sw}",ifName="{port}"}} {total} {p[0] // 1000}.{p[0] % 1000:03d}\n')
    out.write("# EOF\n")
