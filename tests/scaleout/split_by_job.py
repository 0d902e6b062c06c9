#!/usr/bin/env python3
"""Deals a simulated flows.csv to shards by job, as a recogniser's map would route it, and cuts
one shard's records out over a span (its jobs paused), for the fabric stage's pause test
(fabric_pause.sh). A record goes with the job of its source GPU, else of its destination (a
record from a storage or other endpoint to a GPU). Records starting before the scenario's start
(a few, by start jitter) are left out of every file, so that every shard's first window is the
same one without a recogniser writing the service's origin.

Writes OUT/shard<s>.csv, the paused shard's records also in two parts, before and after the
pause (OUT/paused-1.csv, OUT/paused-2.csv), and OUT/all.csv (every shard's records: the
one-process reference's input), and prints each file's records.

Usage: split_by_job.py SIM_DIR OUT SHARD_OF_JOB PAUSED_SHARD PAUSE_FROM_S PAUSE_TO_S
  SHARD_OF_JOB  job=shard pairs by the truth's job names, e.g. job0=0,job1=1,job2=1
  PAUSED_SHARD  whose records starting in [PAUSE_FROM_S, PAUSE_TO_S) after the start are cut"""
import csv
import json
import sys


def main():
    sim, out, mapping = sys.argv[1], sys.argv[2], sys.argv[3]
    paused, pause_from, pause_to = int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    truth = json.load(open(f"{sim}/truth.json"))
    shard_of_job = {k: int(v) for k, v in (p.split("=") for p in mapping.split(","))}
    shard_of_gpu = {g: shard_of_job[j["id"]] for j in truth["jobs"] for g in j["gpus"]}
    t0 = truth["start_ns"]
    lo, hi = t0 + int(pause_from * 1e9), t0 + int(pause_to * 1e9)
    shards = sorted(set(shard_of_job.values()))
    rows = {s: [] for s in shards}
    reader = csv.DictReader(open(f"{sim}/flows.csv", newline=""))
    for r in reader:
        start = int(r["start_ns"])
        shard = shard_of_gpu.get(r["src"], shard_of_gpu.get(r["dst"]))
        if shard is None:
            sys.exit(f"record {r['src']} -> {r['dst']} belongs to no job of the truth")
        if start < t0 or (shard == paused and lo <= start < hi):
            continue
        rows[shard].append(r)
    # By start, as a live stream brings them: a backlog read at once whose records after the
    # pause mixed with earlier ones would look like a clock jumping back and forth (the window
    # thread's clock guard refuses such records).
    by_start = lambda part: sorted(part, key=lambda r: int(r["start_ns"]))
    every = by_start(r for s in shards for r in rows[s])
    paused_rows = by_start(rows[paused])
    files = [(f"shard{s}", by_start(rows[s])) for s in shards] + [("all", every)]
    files += [("paused-1", [r for r in paused_rows if int(r["start_ns"]) < hi]),
              ("paused-2", [r for r in paused_rows if int(r["start_ns"]) >= hi])]
    for name, part in files:
        with open(f"{out}/{name}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=reader.fieldnames)
            w.writeheader()
            w.writerows(part)
        print(f"{name}: {len(part)} records")


if __name__ == "__main__":
    main()
