#!/usr/bin/env python3
"""End-to-end throughput harness (docs/performance.md).

Simulates each scenario once (or reuses a directory given with --data NAME=DIR), runs
`llmprism analyze FLOWS.ipfix --topology ... --timings` on it several times and prints, per stage,
the records, median CPU seconds, records per CPU second, median wall seconds and peak RSS, then one
summary line per scenario and thread count. CPU time (user + sys, from the analyze process's
rusage and its --timings table) is the figure to read on a loaded machine; the 1-minute load
average is printed next to every run.

  bench/e2e.py [--bin build/apps/llmprism/llmprism] [--work /tmp/llmprism-e2e] [--runs 5]
               [--threads 1,2] [--data paper=/tmp/p1] [--quick] [scenario ...]

Default scenarios: tiny paper scale-10k scale-100k. --quick: tiny and paper, one run each, one
thread (about a minute including the simulation of paper).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def load():
    return os.getloadavg()[0]


def run_child(cmd):
    """Runs cmd; returns (stdout, stderr, wall seconds)."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    wall = time.time() - t0
    if p.returncode not in (0, 1):
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{err}")
    return out, err, wall


def rusage_delta(fn):
    before = os.times()
    res = fn()
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return res, cpu


def parse_timings(err):
    stages = {}
    order = []
    for line in err.splitlines():
        if not line.startswith("timings: ") or " stage " in line:
            continue
        f = line.split()
        name, items, cpu, wall, _, rss, _ = f[1:8]
        stages[name] = dict(items=int(items), cpu=float(cpu), wall=float(wall), rss=float(rss) * 1e6)
        order.append(name)
    return order, stages


def heap_pages(err):
    """What --timings says of the heap's pages ("huge pages (GLIBC_TUNABLES=...)"), or ""."""
    for line in err.splitlines():
        if line.startswith("memory: heap in "):
            return line[len("memory: heap in "):]
    return ""


def simulate(args, scenario):
    if scenario in args.data:
        return args.data[scenario], None
    d = os.path.join(args.work, scenario)
    flows = os.path.join(d, "flows.ipfix")
    if not os.path.exists(flows):
        os.makedirs(d, exist_ok=True)
        print(f"simulating {scenario} into {d} (load {load():.1f}) ...", flush=True)
        _, cpu = rusage_delta(lambda: run_child(
            [args.bin, "simulate", "--scenario", scenario, "--seed", "1", "--out", d]))
        print(f"  simulate {scenario}: {cpu:.1f} s CPU", flush=True)
    return d, None


def analyze_runs(args, d, threads):
    runs = []
    for i in range(args.runs):
        cmd = [args.bin, "analyze", os.path.join(d, "flows.ipfix"), "--topology",
               os.path.join(d, "topology.csv"), "--timings", "--threads", str(threads)]
        la = load()
        (out, err, wall), cpu = rusage_delta(lambda: run_child(cmd))
        order, stages = parse_timings(err)
        runs.append(dict(order=order, stages=stages, cpu=cpu, wall=wall, load=la,
                         heap=heap_pages(err)))
    return runs


def med(xs):
    return statistics.median(xs) if xs else 0.0


def report(scenario, threads, runs, summary):
    order = runs[0]["order"]
    records = runs[0]["stages"]["total"]["items"]
    loads = [r["load"] for r in runs]
    heaps = sorted({r["heap"] for r in runs})
    print(f"\n## {scenario}, --threads {threads}: {records} records, {len(runs)} runs, "
          f"load average {min(loads):.1f}-{max(loads):.1f}; heap in {' / '.join(heaps) or '?'}")
    print(f"| stage | items | CPU s (median) | items / CPU s | wall s (median) | peak RSS MB | B/record |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in order:
        if name.startswith("bocd_points"):
            continue
        cpu = med([r["stages"][name]["cpu"] for r in runs])
        wall = med([r["stages"][name]["wall"] for r in runs])
        rss = max(r["stages"][name]["rss"] for r in runs)
        items = runs[0]["stages"][name]["items"]
        rate = items / cpu if cpu > 0 else float("inf")
        print(f"| {name} | {items} | {cpu:.3f} | {rate / 1e6:.1f} M | {wall:.3f} | {rss / 1e6:.0f} | "
              f"{rss / records:.1f} |")
    for name in order:
        if name.startswith("bocd_points"):
            print(f"| {name} | {runs[0]['stages'][name]['items']} | | | | | |")
    cpu = med([r["cpu"] for r in runs])  # the process's user + sys, from rusage
    wall = med([r["wall"] for r in runs])
    rss = max(r["stages"]["total"]["rss"] for r in runs)
    summary.append((scenario, threads, records, cpu, wall, rss, min(loads), max(loads)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/apps/llmprism/llmprism")
    ap.add_argument("--work", default="/tmp/llmprism-e2e")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--data", action="append", default=[], help="NAME=DIR: reuse a simulated scenario")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("scenarios", nargs="*")
    args = ap.parse_args()
    args.data = dict(kv.split("=", 1) for kv in args.data)
    threads = [int(t) for t in args.threads.split(",")]
    scenarios = args.scenarios or ["tiny", "paper", "scale-10k", "scale-100k"]
    if args.quick:
        scenarios = args.scenarios or ["tiny", "paper"]
        args.runs = 1
        threads = [1]
    print(f"machine: {os.cpu_count()} cores, {os.uname().release}; binary {args.bin}")
    summary = []
    for scenario in scenarios:
        d, _ = simulate(args, scenario)
        for t in threads:
            report(scenario, t, analyze_runs(args, d, t), summary)
    print("\n## Summary (CPU = user + sys of the analyze process; medians)")
    print("| scenario | threads | records | CPU s | M records / CPU s | wall s | M records / wall s | "
          "peak RSS MB | B/record | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for s, t, n, cpu, wall, rss, lo, hi in summary:
        print(f"| {s} | {t} | {n} | {cpu:.2f} | {n / cpu / 1e6:.2f} | {wall:.2f} | {n / wall / 1e6:.2f} | "
              f"{rss / 1e6:.0f} | {rss / n:.1f} | {lo:.1f}-{hi:.1f} |")


if __name__ == "__main__":
    main()
