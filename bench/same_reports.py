#!/usr/bin/python3
"""Checks that two llmprism builds give byte-identical results on the same inputs.

For each SCENARIO:SEED it simulates the scenario once (with the first build, into WORK), then runs
`llmprism analyze flows.ipfix --topology topology.csv --report R.json --timelines --threads 1`
(or --threads N) with each build and compares the report JSON, stdout and the stderr data-quality lines (the
--timings table is not asked for; progress is off when stderr is not a terminal). Exit status 1
when anything differs, with the first differing bytes.

    bench/same_reports.py --bin BEFORE --bin AFTER                      # paper and faults, seeds 1-2
    bench/same_reports.py --bin BEFORE --bin AFTER scale-10k:5 --work /tmp/s
    bench/same_reports.py --bin BEFORE --bin AFTER --threads 2 paper:1 faults:1  # the threaded paths

A performance change that must not change results (a faster decoder, sort or store) is checked
with this before it is measured (docs/performance.md).
"""
import argparse
import os
import subprocess
import sys


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, **kw)


def simulate(binary, scenario, seed, work):
    d = os.path.join(work, f"{scenario}-{seed}")
    if not os.path.exists(os.path.join(d, "flows.ipfix")):
        os.makedirs(d, exist_ok=True)
        print(f"simulating {scenario} seed {seed} into {d} ...", flush=True)
        r = run([binary, "simulate", "--scenario", scenario, "--seed", str(seed), "--out", d])
        if r.returncode != 0:
            sys.exit(f"simulate failed:\n{r.stderr.decode(errors='replace')}")
    return d


def analyze(binary, d, tag, threads):
    report = os.path.join(d, f"report.{tag}.json")
    r = run([binary, "analyze", os.path.join(d, "flows.ipfix"), "--topology",
             os.path.join(d, "topology.csv"), "--report", report, "--timelines", "--threads", str(threads)])
    with open(report, "rb") as f:
        body = f.read()
    os.remove(report)
    return dict(rc=r.returncode, stdout=r.stdout, stderr=r.stderr, report=body)


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, help="give two: before, after")
    ap.add_argument("--work", default="/tmp/llmprism-same-reports")
    ap.add_argument("--threads", type=int, default=1, help="analyze --threads for both builds")
    ap.add_argument("cases", nargs="*", default=["paper:1", "paper:2", "faults:1", "faults:2"])
    args = ap.parse_args()
    if len(args.bin) != 2:
        sys.exit("give --bin twice: the build before and the build after")
    failed = 0
    for case in args.cases:
        scenario, seed = case.split(":")
        d = simulate(args.bin[0], scenario, seed, args.work)
        a = analyze(args.bin[0], d, "before", args.threads)
        b = analyze(args.bin[1], d, "after", args.threads)
        for part in ("rc", "stdout", "stderr", "report"):
            if a[part] != b[part]:
                failed += 1
                if part == "rc":
                    print(f"{case}: exit status {a['rc']} vs {b['rc']}")
                    continue
                i = first_difference(a[part], b[part])
                print(f"{case}: {part} differs at byte {i} ({len(a[part])} vs {len(b[part])} bytes): "
                      f"{a[part][max(0, i - 60):i + 60]!r} vs {b[part][max(0, i - 60):i + 60]!r}")
        print(f"{case}: report {len(a['report'])} bytes, "
              f"{'identical' if all(a[p] == b[p] for p in ('rc', 'stdout', 'stderr', 'report')) else 'DIFFERENT'}",
              flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
