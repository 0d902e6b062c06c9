#!/usr/bin/env python3
"""Cuts a flows.csv into parts by start time and deals each part's rows to collectors, for the
scale-out tests that feed records in steps (a part after the analysers' first windows, a part
while a node is down). Writes OUT/p<k>-c<c>.csv (k from 1, c from 1) and prints each part's size
and the last record's start (seconds after the first, or after the aligned origin).

Usage: split_records.py FLOWS_CSV OUT CUTS COLLECTORS [ALIGN]
  CUTS        seconds after the first record's start where a part ends, comma-separated
              ("27": two parts; "5,10,15": four); the last part holds everything after.
  COLLECTORS  rows of a part dealt in turn to this many files (2: every other row).
  ALIGN       count CUTS from the first start rounded down to a multiple of ALIGN seconds since
              the epoch instead: with ALIGN the analysis step, parts begin on the windows' grid."""
import csv
import sys


def main():
    src, out, cuts, collectors = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    align_ns = int(float(sys.argv[5]) * 10**9) if len(sys.argv) > 5 else 1
    rows = list(csv.DictReader(open(src, newline="")))
    fields = list(rows[0].keys())
    t0 = min(int(r["start_ns"]) for r in rows) // align_ns * align_ns
    edges = [int(float(s) * 10**9) for s in cuts.split(",")]
    parts = [[] for _ in range(len(edges) + 1)]
    for r in rows:
        offset = int(r["start_ns"]) - t0
        parts[sum(1 for e in edges if offset >= e)].append(r)
    for k, part in enumerate(parts, 1):
        for c in range(1, collectors + 1):
            with open(f"{out}/p{k}-c{c}.csv", "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=fields)
                w.writeheader()
                w.writerows(part[c - 1::collectors])
        print(f"part {k}: {len(part)} records")
    last = max(int(r["start_ns"]) for r in rows) - t0
    print(f"last start: {last / 1e9:.3f} s")


if __name__ == "__main__":
    main()
