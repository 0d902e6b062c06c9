#!/usr/bin/env python3
"""Accuracy matrix: simulate -> analyze -> eval for scenarios x seeds (x windows).

Prints a markdown table per scenario with mean/min over seeds of the eval metrics, the figures in
docs/evaluation.md. Usage:
  scripts/evaluate.py [--bin build/apps/llmprism/llmprism] [--work /tmp/llmprism-eval]
                      [--seeds 1-5] [--windows 60] scenario...
"""
import argparse
import os
import sys

from prism_eval import KEYS, analyze_and_eval, run


def seeds_of(text):
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/apps/llmprism/llmprism")
    ap.add_argument("--work", default="/tmp/llmprism-eval")
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--windows", default="60")
    ap.add_argument("--duration", default=None, help="simulated seconds (default: the scenario's)")
    ap.add_argument("scenarios", nargs="+")
    args = ap.parse_args()
    windows = [float(w) for w in args.windows.split(",")]
    for scenario in args.scenarios:
        rows = []
        for window in windows:
            per_seed = []
            for seed in seeds_of(args.seeds):
                d = os.path.join(args.work, f"{scenario}-{seed}" + (f"-{args.duration}s" if args.duration else ""))
                if not os.path.exists(os.path.join(d, "truth.json")):
                    extra = ["--duration", args.duration] if args.duration else []
                    run([args.bin, "simulate", "--scenario", scenario, "--seed", str(seed), "--out", d] + extra)
                report = os.path.join(d, f"report-{window:g}.json")
                m = analyze_and_eval(args.bin, [os.path.join(d, "flows.ipfix")],
                                     os.path.join(d, "topology.csv"), report,
                                     os.path.join(d, "truth.json"), window)
                per_seed.append(m)
                print(f"{scenario} seed {seed} window {window:g}s: " + " ".join(
                    f"{k}={m.get(k)}" for k in KEYS), file=sys.stderr)
            rows.append((window, per_seed))
        print(f"\n### {scenario} (seeds {args.seeds})\n")
        print("| window | " + " | ".join(KEYS) + " | analyze s |")
        print("|---" * (len(KEYS) + 2) + "|")
        for window, per_seed in rows:
            cells = []
            for k in KEYS:
                vals = [m.get(k) for m in per_seed if m.get(k) is not None]
                if not vals:
                    cells.append("n/a")
                    continue
                worst = max(vals) if k.startswith("step_error") else min(vals)
                mean = sum(vals) / len(vals)
                fmt = "{:.5f}" if k.startswith("step_error") else "{:.3f}"
                cells.append(f"{fmt.format(mean)} ({fmt.format(worst)})")
            secs = sum(m["analyze_s"] for m in per_seed) / len(per_seed)
            print(f"| {window:g} s | " + " | ".join(cells) + f" | {secs:.1f} |")
        print("\nCells: mean over seeds (worst seed).")


if __name__ == "__main__":
    main()
