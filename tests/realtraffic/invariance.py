#!/usr/bin/env python3
"""Metamorphic invariance of the analysis on the real-traffic corpus.

The same traffic, exported differently, must give the same answer. For a few variants, the
capture is turned into flow records in several ways that keep what the traffic says about the
training (who talks to whom, how much, when), each version is analysed (`llmprism analyze`), and
its report is compared with the report of the untouched capture (the pcap as it is, analyze's
default 1 ms flowlets):

  gap-US        the capture with --flowlet-gap-us US: TCP flowlets cut at another idle gap
  csv           the capture's 1 ms flowlets written as a flow CSV by this script (the same
                records analyze builds itself: checks the conversion the others rely on)
  split-MS      flow CSV, each 1 ms flowlet also cut when it has lasted MS ms (an exporter's active
                timeout: a long transfer becomes several consecutive records)
  packets       flow CSV, one record per captured packet (no aggregation at all)
  merge-US      flow CSV, the per-packet records of a connection direction merged while the gap
                to the previous one is at most US microseconds (flowlets of another gap, built
                outside analyze)
  sample-N      flow CSV of 1 ms flowlets over 1 in N packets (seeded random), sampling_rate N

Compared with the untouched version (the "invariants"):
  jobs          the same GPU sets
  pairs         every GPU pair the untouched report labels dp / pp / tp has the same label, and no
                other pair is labelled
  layout        each job's DP x PP x TP
  steps         per GPU: the number of steps within 5% (or both none), and the median step
                duration within max(2 ms, 1%). Why: every transform moves record boundaries by
                at most the flowlet gap or the cut (1 ms, up to the transform's own scale), while
                the steps of these variants last 0.3-2 s; a step boundary rebuilt from the
                same transfers should move by a few ms at most, 1% of a step or less. A larger
                change means the step detection depends on how the records were cut.

Every transform runs on every variant (about 10 s in all). Each is expected to pass or known to
fail on a variant (invariance.json); the exit status is 1 if an expected one fails. A known
failure is printed with what it breaks, and one that passes is reported (so that it can move to
the expected list), without failing. Note that "untouched" is not the truth: a transform can
break an invariant by getting an answer right that the untouched capture gets wrong.

Usage: invariance.py LLMPRISM CORPUS_DIR WORK_DIR [--variants V,...] [--transforms T,...]
       [--json FILE]
"""
import argparse
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire_summary  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CSV_COLUMNS = ["src", "dst", "start_ns", "end_ns", "bytes", "packets", "src_port", "dst_port",
               "proto", "qp", "sampling_rate", "switch"]
STEP_COUNT_TOLERANCE = 0.05
STEP_MEDIAN_TOLERANCE = 0.01
STEP_MEDIAN_TOLERANCE_NS = 2_000_000


def flowlets(packets, gap_ns, max_ns=None, keep=None):
    """Flow records of the TCP packets with payload: per direction of a connection, a record
    ends when the next packet comes more than gap_ns after the previous one, or (max_ns) when the
    record has lasted max_ns. keep(i) selects packets (sampling). Sorted by start."""
    open_, out = {}, []
    for i, (t, src, dst, sport, dport, _, length, _) in enumerate(packets):
        if length <= 0 or (keep is not None and not keep(i)):
            continue
        key = (src, dst, sport, dport)
        r = open_.get(key)
        if r is not None and (t - r[1] > gap_ns or (max_ns is not None and t - r[0] >= max_ns)):
            out.append((key, r))
            r = None
        if r is None:
            open_[key] = [t, t, length, 1]
        else:
            r[1], r[2], r[3] = t, r[2] + length, r[3] + 1
    out.extend(open_.items())
    out.sort(key=lambda kr: kr[1][0])
    return out


def write_csv(path, records, sampling_rate=1):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for (src, dst, sport, dport), (t0, t1, nbytes, npk) in records:
            w.writerow([src, dst, t0, t1, nbytes, npk, sport, dport, 6, 0, sampling_rate, ""])


# name -> (kind, parameter). kind "pcap": the capture with extra analyze arguments; "csv": a
# flow CSV built from the capture's packets.
TRANSFORMS = {
    "gap-100": ("pcap", ["--flowlet-gap-us", "100"]),
    "gap-300": ("pcap", ["--flowlet-gap-us", "300"]),
    "gap-3000": ("pcap", ["--flowlet-gap-us", "3000"]),
    "gap-10000": ("pcap", ["--flowlet-gap-us", "10000"]),
    "csv": ("csv", dict(gap_ns=1_000_000)),
    "split-1000": ("csv", dict(gap_ns=1_000_000, max_ns=1_000_000_000)),
    "split-100": ("csv", dict(gap_ns=1_000_000, max_ns=100_000_000)),
    "split-10": ("csv", dict(gap_ns=1_000_000, max_ns=10_000_000)),
    "split-1": ("csv", dict(gap_ns=1_000_000, max_ns=1_000_000)),
    "packets": ("csv", dict(gap_ns=-1)),
    "merge-10": ("csv", dict(gap_ns=10_000)),
    "merge-100": ("csv", dict(gap_ns=100_000)),
    "sample-10": ("csv", dict(gap_ns=1_000_000, sample=10)),
}


def analyze(binary, inputs, topology, report, extra=()):
    cmd = [binary, "analyze", *inputs, "--topology", topology, "--report", report, "--timelines", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    with open(report) as f:
        return json.load(f)


def summary(report):
    jobs = {}
    for j in report["jobs"]:
        lay = j.get("layout") or {}
        jobs[tuple(sorted(j["gpus"]))] = (lay.get("dp"), lay.get("pp"), lay.get("tp"))
    pairs = {(p["a"], p["b"]): p["label"] for p in report["pairs"]
             if p["label"] in ("dp", "pp", "tp")}
    steps = {}
    for t in report["timelines"]:
        d = [s["end_ns"] - s["start_ns"] for s in t["steps"]]
        steps[(t["gpu"], t["job"])] = (len(d), statistics.median(d) if d else None)
    return jobs, pairs, steps


def compare(base, other):
    """The invariants that `other` breaks, as short sentences (empty: all hold)."""
    (jobs0, pairs0, steps0), (jobs1, pairs1, steps1) = base, other
    bad = []
    if set(jobs0) != set(jobs1):
        bad.append(f"jobs {sorted(len(g) for g in jobs1)} GPUs, untouched "
                   f"{sorted(len(g) for g in jobs0)}")
    else:
        for g, lay in jobs0.items():
            if jobs1[g] != lay:
                bad.append(f"layout {'x'.join(map(str, jobs1[g]))}, untouched "
                           f"{'x'.join(map(str, lay))}")
    changed = [k for k in pairs0 if pairs1.get(k) != pairs0[k]]
    extra = [k for k in pairs1 if k not in pairs0]
    if changed or extra:
        ex = (changed + extra)[0]
        bad.append(f"pairs: {len(changed)} of {len(pairs0)} labels changed, {len(extra)} more "
                   f"labelled (e.g. {ex[0]}-{ex[1]}: {pairs1.get(ex, 'unknown')}, untouched "
                   f"{pairs0.get(ex, 'unknown')})")
    # Steps per GPU, matched by GPU address (job ids are per report).
    by_gpu0 = {g: v for (g, _), v in steps0.items()}
    by_gpu1 = {g: v for (g, _), v in steps1.items()}
    count_bad, median_bad, worst = 0, 0, None
    for g, (n0, m0) in by_gpu0.items():
        n1, m1 = by_gpu1.get(g, (0, None))
        if abs(n1 - n0) > STEP_COUNT_TOLERANCE * max(n0, 1) or (n0 == 0) != (n1 == 0):
            count_bad += 1
            worst = worst or f"{g}: {n1} steps, untouched {n0}"
        elif m0 is not None and abs(m1 - m0) > max(STEP_MEDIAN_TOLERANCE_NS,
                                                   STEP_MEDIAN_TOLERANCE * m0):
            median_bad += 1
            worst = worst or f"{g}: median step {m1 / 1e6:.1f} ms, untouched {m0 / 1e6:.1f} ms"
    if count_bad or median_bad:
        bad.append(f"steps: {count_bad} of {len(by_gpu0)} GPUs with another step count, "
                   f"{median_bad} with another median step (e.g. {worst})")
    return bad


def run_variant(binary, corpus, work, variant, names):
    d = os.path.join(corpus, variant)
    cap, topo = os.path.join(d, "capture.pcap.zst"), os.path.join(d, "topology.csv")
    out = os.path.join(work, variant)
    os.makedirs(out, exist_ok=True)
    base = summary(analyze(binary, [cap], topo, os.path.join(out, "untouched.json")))
    packets = None
    results = {}
    for name in names:
        kind, param = TRANSFORMS[name]
        report = os.path.join(out, f"{name}.json")
        if kind == "pcap":
            rep = analyze(binary, [cap], topo, report, param)
        else:
            if packets is None:
                packets = wire_summary.read_packets(cap)
            keep, rate = None, 1
            if "sample" in param:
                rate = param["sample"]
                rng = random.Random(f"{variant}-{rate}")
                chosen = {i for i in range(len(packets)) if rng.randrange(rate) == 0}
                keep = chosen.__contains__
            recs = flowlets(packets, param["gap_ns"], param.get("max_ns"), keep)
            path = os.path.join(out, f"{name}.csv")
            write_csv(path, recs, rate)
            rep = analyze(binary, [path], topo, report)
            os.remove(path)
        results[name] = compare(base, summary(rep))
    return base, results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("corpus")
    ap.add_argument("work")
    ap.add_argument("--variants", default=None)
    ap.add_argument("--transforms", default=None)
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    with open(os.path.join(HERE, "invariance.json")) as f:
        spec = json.load(f)
    variants = args.variants.split(",") if args.variants else spec["variants"]
    expected = {v: set(spec["expected_pass"]) - set(spec["known_failures"].get(v, []))
                for v in variants}
    names = args.transforms.split(",") if args.transforms else list(TRANSFORMS)
    for n in names:
        if n not in TRANSFORMS:
            raise SystemExit(f"unknown transform {n!r} (known: {', '.join(TRANSFORMS)})")
    os.makedirs(args.work, exist_ok=True)
    failed, now_pass, table = [], [], {}
    t_begin = time.monotonic()
    for v in variants:
        _, results = run_variant(args.binary, args.corpus, args.work, v, names)
        table[v] = results
        for n, bad in results.items():
            status = "pass" if not bad else "FAIL"
            note = ""
            if n in expected[v] and bad:
                failed.append((v, n))
            elif n not in expected[v]:
                note = " (known failure)" if bad else " (known failure, passes now)"
                if not bad:
                    now_pass.append((v, n))
            print(f"{v:<10} {n:<10} {status}{note}" + ("".join(f"\n    {b}" for b in bad)))
    print(f"{sum(len(r) for r in table.values())} transform runs on {len(variants)} variants in "
          f"{time.monotonic() - t_begin:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)
    for v, n in now_pass:
        print(f"note: {v} {n} passes now; move it out of known_failures in invariance.json")
    if failed:
        print("FAILED: " + ", ".join(f"{v} {n}" for v, n in failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
