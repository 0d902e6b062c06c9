#!/usr/bin/env python3
"""What two threads buy `llmprism analyze`, against what two cores give this machine at all.

The speed target for two threads is the whole run at one thread over the run at two. On a shared
or virtual machine two cores do not give twice one core even to two programs that share nothing:
they share caches, memory bandwidth and the hypervisor. So each round runs, on the same records,

  1. analyze --threads 1, alone;
  2. analyze --threads 2, alone;
  3. two analyze --threads 1 at once (two independent copies, same command);

and the script prints the medians of each, the speedup (1 / 2, the median of the per-round
ratios) and the machine's ceiling for this work: how much more two copies get through than one,
2 * (1) / (3). A program whose every stage ran on both cores with no cost of its own for that
would reach the ceiling, not 2. The speedup's share of the ceiling is what the program's own
serial parts and coordination cost. The order within a round is reversed every other round and
each run starts after a pause (--pause, 3 s), as bench/vs_nfdump.py does (docs/performance.md).

The runs alone also print their --timings, and a table of each stage's wall medians at one and
two threads shows where the share is lost: a stage's time at two threads over the time it would
take at the ceiling (its one-thread time / the ceiling). The network rule runs beside the
analysis's later stages at two threads, so those stages' times there include waiting for a core,
and diagnose's exclude the rule's first part: a last row sums dp_steps, layout_timelines and
diagnose, which compares between the columns.

  bench/two_threads.py [--bin build/apps/llmprism/llmprism] --data DIR [--runs 5] [--pause 3]
                       [--analyze-arg ARG ...]

DIR holds flows.ipfix and topology.csv (`llmprism simulate --scenario scale-10k --seed 5 --out DIR`).
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_nfdump import med, parse_timings, timed  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/apps/llmprism/llmprism")
    ap.add_argument("--data", required=True, help="a simulated directory (flows.ipfix, topology.csv)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pause", type=float, default=3.0, help="seconds of rest before each timed run")
    ap.add_argument("--analyze-arg", action="append", default=[])
    args = ap.parse_args()
    for f in ("flows.ipfix", "topology.csv"):
        if not os.path.exists(os.path.join(args.data, f)):
            sys.exit(f"{args.data}: no {f} (make one with llmprism simulate --out {args.data})")

    def cmd(threads, timings=False):
        return [args.bin, "analyze", os.path.join(args.data, "flows.ipfix"), "--topology",
                os.path.join(args.data, "topology.csv"), "--report", "/dev/null",
                "--threads", str(threads)] + (["--timings"] if timings else []) + args.analyze_arg

    def check(r):
        if r["rc"] not in (0, 1):  # 1: findings
            sys.exit(f"analyze failed ({r['rc']}):\n{r['err']}")
        return r

    def pair():
        """Two one-thread copies started together: the wall until both have ended (the time the
        two took to get through the work) and each one's CPU."""
        t0 = time.monotonic()
        procs = [subprocess.Popen(cmd(1), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        cpus = []
        for p in procs:
            err = p.stderr.read()
            _, status, ru = os.wait4(p.pid, 0)
            check(dict(err=err, rc=os.waitstatus_to_exitcode(status)))
            cpus.append(ru.ru_utime + ru.ru_stime)
        return dict(wall=time.monotonic() - t0, cpus=cpus)

    one, two, pairs = [], [], []
    for i in range(args.runs):
        order = ["one", "two", "pair"]
        if i % 2 == 1:
            order.reverse()
        for kind in order:
            time.sleep(args.pause)
            if kind == "one":
                one.append(check(timed(cmd(1, timings=True))))
            elif kind == "two":
                two.append(check(timed(cmd(2, timings=True))))
            else:
                pairs.append(pair())
        print(f"round {i + 1}: one thread {one[-1]['wall']:.2f} s; two threads {two[-1]['wall']:.2f} s; "
              f"two copies at once {pairs[-1]['wall']:.2f} s", flush=True)

    pair_wall = [p["wall"] for p in pairs]
    speedup = med([a["wall"] / b["wall"] for a, b in zip(one, two)])
    ceiling = med([2 * a["wall"] / p for a, p in zip(one, pair_wall)])
    print(f"\n## {args.data}: medians of {args.runs} rounds, {os.cpu_count()} cores "
          f"{' '.join(args.analyze_arg)}")
    print("| run | wall s | CPU s |")
    print("|---|---:|---:|")
    print(f"| --threads 1, alone | {med([r['wall'] for r in one]):.2f} | {med([r['cpu'] for r in one]):.2f} |")
    print(f"| --threads 2, alone | {med([r['wall'] for r in two]):.2f} | {med([r['cpu'] for r in two]):.2f} |")
    print(f"| two --threads 1 at once (wall: both done; CPU: each) | {med(pair_wall):.2f} | "
          f"{med([c for p in pairs for c in p['cpus']]):.2f} |")
    print(f"\nspeedup of two threads: {speedup:.2f}×; the machine's ceiling (two copies' throughput "
          f"over one's): {ceiling:.2f}×; the speedup is {100 * speedup / ceiling:.0f}% of the ceiling")
    print_stages(one, two, ceiling)


def print_stages(one, two, ceiling):
    """Each stage's wall medians at one and two threads, and its two-thread time above what the
    ceiling would give it (its one-thread time / the ceiling)."""
    parsed_one = [parse_timings(r["err"]) for r in one]
    parsed_two = [parse_timings(r["err"]) for r in two]
    order = [s for s in parsed_one[0][0] if not s.startswith("bocd_")]
    print("\n| stage | 1 thread wall s | 2 threads wall s | speedup | above the ceiling's time, s |")
    print("|---|---:|---:|---:|---:|")
    for stage in order:
        w1 = med([p[1][stage]["wall"] for p in parsed_one if stage in p[1]])
        w2 = med([p[1][stage]["wall"] for p in parsed_two if stage in p[1]])
        speed = f"{w1 / w2:.2f}×" if w2 > 0 else "-"
        print(f"| {stage} | {w1:.3f} | {w2:.3f} | {speed} | {w2 - w1 / ceiling:+.3f} |")
    # At two threads the network rule measures its record classes (diagnose's work) during
    # dp_steps and layout_timelines: those stages carry time that one thread spends in diagnose,
    # so only their sum compares between the two columns.
    beside = [s for s in ("dp_steps", "layout_timelines", "diagnose") if s in order]
    if len(beside) == 3:
        def summed(parsed):
            return med([sum(p[1][s]["wall"] for s in beside) for p in parsed
                        if all(s in p[1] for s in beside)])
        w1, w2 = summed(parsed_one), summed(parsed_two)
        speed = f"{w1 / w2:.2f}×" if w2 > 0 else "-"
        print(f"| {' + '.join(beside)} (overlapping at two threads) | {w1:.3f} | {w2:.3f} | "
              f"{speed} | {w2 - w1 / ceiling:+.3f} |")


if __name__ == "__main__":
    main()
