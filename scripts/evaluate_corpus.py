#!/usr/bin/env python3
"""Scores llmprism on the real-traffic corpus (tests/realtraffic/corpus, docs/realtraffic.md).

For each variant: `llmprism analyze capture.pcap.zst --topology topology.csv --report
report.json --timelines --window W` (W: one window over the whole capture, at least analyze's
default 60 s; --window to choose another), then `llmprism eval --truth truth.json --report
report.json --json`. Prints one markdown table (one row per variant), then per variant what went
wrong: mislabelled, missing and extra pairs (with each GPU's role in the truth: rank, stage s, DP
index d, TP index t), the layout found, and the warning+ findings ("unexplained": matching no
injected fault, and for slow_step not over steps that the truth's own step times show slow). With
--check, compares every variant with tests/realtraffic/thresholds.json (or --thresholds FILE, e.g.
tests/realtraffic/floor.json) and exits 1 if any threshold is missed.

Usage: scripts/evaluate_corpus.py [--bin build/apps/llmprism/llmprism] [--corpus DIR]
                                  [--work /tmp/llmprism-corpus-eval] [--window S] [--check]
                                  [variant...]
"""
import argparse
import json
import math
import os
import sys

from prism_eval import analyze_and_eval

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ip_key(ip):
    return tuple(int(x) for x in ip.split("."))


def roles(truth):
    """GPU ip -> 'r<rank> s<stage> d<dp> t<tp>' from the truth layout (stage lists are dp-major,
    tp fastest, as tests/realtraffic/variants.py assigns them)."""
    out = {}
    for job in truth["jobs"]:
        lay = job["layout"]
        for s, stage in enumerate(lay["stages"]):
            for k, ip in enumerate(stage):
                out[ip] = (f"{job['id']} r{job['gpus'].index(ip)} s{s} d{k // lay['tp']} "
                           f"t{k % lay['tp']}")
    return out


def warning_findings(report):
    return [f for f in report.get("findings", []) if f.get("severity") in ("warning", "critical")]


# A slow_step finding that no injected fault explains is still right when the truth's own step
# times (logged by the ranks) show a step this much above the job's median within the finding's
# span: the capture host's load slowed the job, and the truth's fault list does not say so.
TRUTH_SLOWDOWN = 1.10


def slowdown_in_truth(finding, truth):
    """The slowest truth step of the finding's job within its span (per step, the median over the
    job's GPUs) / the job's median step time; None if the span holds no truth step."""
    job = next((j for j in truth["jobs"] if j["id"] == finding.get("job")), None)
    gpus = set(job["gpus"]) if job else set()
    median = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    per_step, inside = {}, set()
    for t in truth["timelines"]:
        if t["gpu"] not in gpus:
            continue
        for k, s in enumerate(t["steps"]):
            per_step.setdefault(k, []).append(s["end_ns"] - s["start_ns"])
            if s["end_ns"] > finding["start_ns"] and s["start_ns"] < finding["end_ns"]:
                inside.add(k)
    if not inside:
        return None
    step = {k: median(v) for k, v in per_step.items()}
    return max(step[k] for k in inside) / median(list(step.values()))


def unexplained_warnings(report, truth, m):
    """Warning+ findings that match no injected fault (eval's false positives), less slow_step
    findings over steps the truth itself shows slow (TRUTH_SLOWDOWN)."""
    fp = set(m["details"].get("false_positive_findings", []))
    n = 0
    for i, f in enumerate(report.get("findings", [])):
        if i not in fp or f.get("severity") not in ("warning", "critical"):
            continue
        ratio = slowdown_in_truth(f, truth) if f.get("kind") == "slow_step" else None
        if ratio is None or ratio < TRUTH_SLOWDOWN:
            n += 1
    return n


def rank_to_rank_error(truth, gpus):
    """(p50, p99) over a job's ranks and steps of |rank's step - the step's median over the ranks|
    / rank's step. The ranks of a DP-only job leave each step at the same collective, so a network
    observer gives them one boundary; what their truth steps differ by is the host's scheduling of
    the emulated GPU (a rank woken late), which no record shows. A floor, not the whole of it: a
    delay common to all ranks is not in it."""
    tls = [t for t in truth["timelines"] if t["gpu"] in gpus]
    n = min((len(t["steps"]) for t in tls), default=0)
    errs = []
    for k in range(n):
        durs = [t["steps"][k]["end_ns"] - t["steps"][k]["start_ns"] for t in tls]
        med = sorted(durs)[len(durs) // 2]
        errs += [abs(d - med) / d for d in durs if d > 0]
    if not errs:
        return None, None
    errs.sort()
    return errs[len(errs) // 2], errs[min(len(errs) - 1, int(len(errs) * 0.99))]


def details(variant, truth, report, m):
    """Lines describing what the report got wrong."""
    lines = []
    role = roles(truth)
    who = lambda ip: f"{ip} ({role.get(ip, 'not a GPU')})"  # noqa: E731
    rpairs = {tuple(sorted((p["a"], p["b"]), key=ip_key)): p for p in report.get("pairs", [])}
    tkeys = set()
    for p in truth["pairs"]:
        key = tuple(sorted((p["a"], p["b"]), key=ip_key))
        tkeys.add(key)
        r = rpairs.get(key)
        if r is None:
            lines.append(f"- missing {p['label']} pair {who(key[0])} - {who(key[1])}")
        elif r["label"] != p["label"]:
            rule = r.get("evidence", {}).get("rule", "")
            lines.append(f"- {p['label']} pair {who(key[0])} - {who(key[1])} labelled "
                         f"{r['label']} (rule: {rule})")
    for key, r in sorted(rpairs.items(), key=lambda kv: [ip_key(x) for x in kv[0]]):
        if key not in tkeys and r["label"] in ("dp", "pp", "tp"):
            rule = r.get("evidence", {}).get("rule", "")
            lines.append(f"- extra {r['label']} pair {who(key[0])} - {who(key[1])} "
                         f"(rule: {rule})")
    for j in m["details"]["jobs"]:
        rj = next((x for x in report["jobs"] if x["id"] == j["report_id"]), None)
        tj = next(x for x in truth["jobs"] if x["id"] == j["truth_id"])
        if rj is None:
            lines.append(f"- {j['truth_id']} ({j['layout']}): not found")
            continue
        lay = rj["layout"]
        if not j["layout_match"]["exact"]:
            stages = " | ".join(",".join(ip.split(".")[-1] for ip in st) for st in lay["stages"])
            tstages = " | ".join(",".join(ip.split(".")[-1] for ip in st)
                                 for st in tj["layout"]["stages"])
            lines.append(f"- {j['truth_id']}: layout {lay['dp']}x{lay['pp']}x{lay['tp']} stages "
                         f"[{stages}], truth {j['layout']} [{tstages}] (last octets)")
        if not j["exact"]:
            lines.append(f"- {j['truth_id']}: report {j['report_id']} has {j['report_gpus']} GPUs, "
                         f"{j['overlap_gpus']} of the truth's {j['truth_gpus']}")
        gpus = set(tj["gpus"])
        rsteps = [len(t["steps"]) for t in report.get("timelines", []) if t["gpu"] in gpus]
        tsteps = [len(t["steps"]) for t in truth["timelines"] if t["gpu"] in gpus]
        median = rj.get("step_time", {}).get("median_s")
        tmed = sorted((s["end_ns"] - s["start_ns"]) / 1e9 for t in truth["timelines"]
                      if t["gpu"] in gpus for s in t["steps"])
        tmedian = tmed[len(tmed) // 2] if tmed else None
        lines.append(f"- {j['truth_id']}: steps matched {j['steps_matched']}/{j['steps_total']}; "
                     f"report steps per GPU {min(rsteps, default=0)}-{max(rsteps, default=0)} "
                     f"(truth {min(tsteps, default=0)}), median {fmt(median, 3)} s "
                     f"(truth {fmt(tmedian, 3)} s)")
        if lay.get("pp", 1) == 1 and lay.get("tp", 1) == 1:
            p50, p99 = rank_to_rank_error(truth, gpus)
            lines.append(f"- {j['truth_id']}: truth steps of its ranks against their median, "
                         f"p50 {fmt(p50, 4)} p99 {fmt(p99, 4)} (a floor for a network observer)")
    fp = set(m["details"].get("false_positive_findings", []))
    shown = 0
    for i, f in enumerate(report.get("findings", [])):
        if f.get("severity") not in ("warning", "critical") or shown == 8:
            continue
        shown += 1
        note = ""
        if i in fp:
            ratio = slowdown_in_truth(f, truth) if f.get("kind") == "slow_step" else None
            note = (" [no injected fault; slowest truth step there " +
                    (f"{ratio:.2f}x" if ratio else "n/a") + " the median]")
        lines.append(f"- finding {f['severity']} {f['kind']} gpus {len(f.get('gpus', []))} "
                     f"switches {f.get('switches', [])}: {f.get('summary', '')}{note}")
    n = len(warning_findings(report))
    if n > 8:
        lines.append(f"- ... {n - 8} more warning+ findings")
    return lines


def check(variant, row, thresholds):
    limits = dict(thresholds["default"])
    limits.update(thresholds["variants"].get(variant, {}))
    misses = []
    for key, bound in limits.items():
        if bound is None:
            continue
        metric, kind = key.rsplit("_", 1)
        value = row.get(metric)
        if value is None:
            misses.append(f"{metric} n/a (needs {'>=' if kind == 'min' else '<='} {bound})")
        elif kind == "min" and value < bound:
            misses.append(f"{metric} {value:.4g} < {bound}")
        elif kind == "max" and value > bound:
            misses.append(f"{metric} {value:.4g} > {bound}")
    return misses


def fmt(v, digits=3):
    if v is None:
        return "n/a"
    if isinstance(v, int):
        return str(v)
    return f"{v:.{digits}f}"


def covering_window_s(truth):
    """analyze's window for a variant: one window over the whole capture, analyze's default 60 s
    where the capture is shorter. A step astride two windows is in neither window's timeline, so
    windows shorter than the capture lose a step per GPU at each boundary; the corpus scores what
    the analysis makes of the traffic, not where a window happened to cut it."""
    return max(60.0, math.ceil((truth["end_ns"] - truth["start_ns"]) / 1e9) + 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/apps/llmprism/llmprism"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "tests/realtraffic/corpus"))
    ap.add_argument("--work", default="/tmp/llmprism-corpus-eval")
    ap.add_argument("--thresholds", default=os.path.join(ROOT, "tests/realtraffic/thresholds.json"))
    ap.add_argument("--check", action="store_true", help="exit 1 if a threshold is missed")
    ap.add_argument("--window", type=float, default=None,
                    help="analyze --window in seconds (default: one window covering the capture)")
    ap.add_argument("variants", nargs="*")
    args = ap.parse_args()
    variants = args.variants or sorted(
        d for d in os.listdir(args.corpus)
        if os.path.exists(os.path.join(args.corpus, d, "truth.json")))
    if not variants:
        sys.exit(f"{args.corpus}: no corpus variant (a directory with truth.json)")
    thresholds = json.load(open(args.thresholds))

    rows, notes, failures = [], [], {}
    for v in variants:
        d = os.path.join(args.corpus, v)
        w = os.path.join(args.work, v)
        os.makedirs(w, exist_ok=True)
        report_path = os.path.join(w, "report.json")
        truth = json.load(open(os.path.join(d, "truth.json")))
        m = analyze_and_eval(args.bin, [os.path.join(d, "capture.pcap.zst")],
                             os.path.join(d, "topology.csv"), report_path,
                             os.path.join(d, "truth.json"),
                             window=args.window or covering_window_s(truth))
        report = json.load(open(report_path))
        c = m["details"]["counts"]
        row = dict(m)
        row["pairs_extra_labelled"] = c["pairs_extra_labelled"]
        row["warning_findings"] = len(warning_findings(report))
        row["unexplained_warnings"] = unexplained_warnings(report, truth, m)
        row["ranks"] = sum(len(j["gpus"]) for j in truth["jobs"])
        row["truth_steps"] = c["truth_steps"]
        row["records"] = report["input"].get("records_read", 0)
        rows.append((v, row))
        notes.append((v, details(v, truth, report, m)))
        misses = check(v, row, thresholds)
        if misses:
            failures[v] = misses
        print(f"{v}: " + " ".join(f"{k}={fmt(row.get(k), 4)}" for k in (
            "jobs_exact_fraction", "pairs_accuracy", "pairs_extra_labelled", "step_error_p50",
            "steps_matched_fraction", "warning_findings")), file=sys.stderr)

    cols = [("ranks", "ranks", 0), ("truth_steps", "truth steps", 0), ("records", "records", 0),
            ("jobs_exact_fraction", "jobs exact", 3), ("pairs_accuracy", "pairs acc", 3),
            ("pairs_extra_labelled", "extra dp/pp/tp pairs", 0),
            ("layout_exact_fraction", "layout exact", 3), ("step_error_p50", "step err p50", 4),
            ("step_error_p99", "step err p99", 4), ("step_error_max", "step err max", 4),
            ("steps_matched_fraction", "steps matched", 3), ("faults_precision", "faults P", 3),
            ("faults_recall", "faults R", 3), ("faults_localized_fraction", "localized", 3),
            ("faults_cause_fraction", "cause", 3), ("warning_findings", "warning+ findings", 0),
            ("unexplained_warnings", "of them unexplained", 0)]
    print("| variant | " + " | ".join(c[1] for c in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for v, row in rows:
        print(f"| {v} | " + " | ".join(fmt(row.get(k), digits) for k, _, digits in cols) + " |")
    print()
    for v, lines in notes:
        if lines:
            print(f"#### {v}\n" + "\n".join(lines) + "\n")
    if args.check:
        if failures:
            print(f"Thresholds missed ({os.path.relpath(args.thresholds, ROOT)}):")
            for v, misses in failures.items():
                print(f"- {v}: " + "; ".join(misses))
            return 1
        print("Every variant meets its thresholds.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
