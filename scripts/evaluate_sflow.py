#!/usr/bin/env python3
"""Accuracy against the sFlow sampling rate: for each scenario (seed 1 unless --seed) and each N,
`llmprism simulate --emit sflow --sampling N` (the sFlow v5 export of the switches' agents, as a
capture: sim/sflow_emitter.h), `llmprism analyze sflow.pcap --topology topology.csv --window W
--timelines` and `llmprism eval --json`; plus a reference row from the same simulation's unsampled
flow records (flows.ipfix). Prints one markdown table per scenario (docs/evaluation.md).

Usage: evaluate_sflow.py [--bin build/apps/llmprism/llmprism] [--out /tmp/prism-sflow-eval]
                         [--seed 1] [--window 60] [--rates 1,100,1000,10000] scenario...
An N whose export would exceed the emitter's sample limit is reported as not run.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prism_eval import KEYS, analyze_and_eval  # noqa: E402

COLUMNS = ["jobs_exact_fraction", "pairs_accuracy", "layout_exact_fraction", "step_error_p50",
           "step_error_p99", "steps_matched_fraction", "faults_precision", "faults_recall"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/apps/llmprism/llmprism")
    ap.add_argument("--out", default="/tmp/prism-sflow-eval")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--window", type=float, default=60)
    ap.add_argument("--rates", default="1,100,1000,10000")
    ap.add_argument("scenarios", nargs="+")
    args = ap.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    assert set(COLUMNS) <= set(KEYS)
    for scenario in args.scenarios:
        rows = []
        have_reference = False
        for n in rates:
            d = os.path.join(args.out, f"{scenario}-{args.seed}-n{n}")
            shutil.rmtree(d, ignore_errors=True)
            sim = subprocess.run([args.bin, "simulate", "--scenario", scenario, "--seed",
                                  str(args.seed), "--emit", "sflow", "--sampling", str(n),
                                  "--out", d], capture_output=True, text=True)
            if sim.returncode != 0:
                rows.append((f"sFlow 1:{n}", None, sim.stderr.strip().splitlines()[-1]))
                continue
            if not have_reference:  # every N simulates the same records: analyse them once
                ref = analyze_and_eval(args.bin, [os.path.join(d, "flows.ipfix")],
                                       os.path.join(d, "topology.csv"),
                                       os.path.join(d, "report-ref.json"),
                                       os.path.join(d, "truth.json"), args.window)
                rows.insert(0, ("unsampled records", ref, "flows.ipfix"))
                have_reference = True
            m = analyze_and_eval(args.bin, [os.path.join(d, "sflow.pcap")],
                                 os.path.join(d, "topology.csv"), os.path.join(d, "report.json"),
                                 os.path.join(d, "truth.json"), args.window)
            with open(os.path.join(d, "report.json")) as f:
                note = json.load(f)["input"].get("sflow_flow_samples", 0)
            rows.append((f"sFlow 1:{n}", m, f"{note:,} samples"))
            os.remove(os.path.join(d, "sflow.pcap"))  # large at small N
        print(f"\n### {scenario} (seed {args.seed}, window {args.window:g} s)\n")
        print("| input | " + " | ".join(COLUMNS) + " | analyze s | note |")
        print("|---|" + "---|" * (len(COLUMNS) + 2))
        for name, m, note in rows:
            if m is None:
                print(f"| {name} | " + " | ".join("-" for _ in COLUMNS) + f" | - | not run: {note} |")
                continue
            cells = []
            for k in COLUMNS:
                v = m.get(k)
                cells.append("n/a" if v is None else f"{v:.3f}" if not k.startswith("step_error")
                             else f"{v:.5f}")
            print(f"| {name} | " + " | ".join(cells) + f" | {m['analyze_s']:.1f} | {note} |")


if __name__ == "__main__":
    main()
