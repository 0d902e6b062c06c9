#!/usr/bin/env python3
"""The committed real-traffic corpus is usable: every variant's capture decodes (llmprism analyze
exits 0, reads records, counts no bad packet), its truth.json is well-formed and consistent with
topology.csv and meta.json, `llmprism eval` accepts truth and report, and the tensors on the wire
have realistic sizes (wire_summary.py reads gloo's message preambles): every truth pair carries
data messages whose median payload is at least MIN_MEDIAN_MESSAGE_BYTES of its kind, far above
the few-KiB control writes of a collective library. Needs no torch.

Also used by regen.sh on a freshly made variant (--expect-one-job: analyze must find exactly one
job, with the truth's GPU set).

Usage: check_corpus.py LLMPRISM CORPUS_DIR WORK_DIR [--expect-one-job] [variant...]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire_summary  # noqa: E402

MIN_STEPS = 40  # optimizer steps per rank (truth steps: one fewer)
# Median payload of a truth pair's data messages, per pair kind: activations and gradients
# (pp) and tensor-parallel all-reduce chunks (tp) of 256 KiB or more; data-parallel ring chunks
# of 128 KiB or more (DDP's 1 MiB buckets cut in 2 x 4 ring chunks).
MIN_MEDIAN_MESSAGE_BYTES = {"pp": 256 << 10, "tp": 256 << 10, "dp": 128 << 10}
# Share of the GPU pairs' payload bytes whose gloo messages wire_summary.py reads (the rest are
# messages whose preamble starts inside a packet, beyond the snapshot length).
MIN_PARSED_FRACTION = 0.8


def fail(variant, msg):
    sys.exit(f"FAIL {variant}: {msg}")


def check_truth(v, truth, topo, meta):
    if truth.get("version") != 1:
        fail(v, f"truth version {truth.get('version')}, expected 1")
    if truth.get("scenario") != v:
        fail(v, f"truth scenario {truth.get('scenario')!r}, expected {v!r}")
    if not truth["start_ns"] < truth["end_ns"]:
        fail(v, "truth start_ns >= end_ns")
    gpu_rows = {ip: r for ip, r in topo.items() if r["kind"] == "gpu"}
    all_gpus = set()
    job_of = {}
    for job in truth["jobs"]:
        lay = job["layout"]
        gpus = job["gpus"]
        if len(set(gpus)) != len(gpus) or lay["dp"] * lay["pp"] * lay["tp"] != len(gpus):
            fail(v, f"{job['id']}: {len(gpus)} GPUs for layout {lay['dp']}x{lay['pp']}x{lay['tp']}")
        staged = [ip for st in lay["stages"] for ip in st]
        if len(lay["stages"]) != lay["pp"] or sorted(staged) != sorted(gpus):
            fail(v, f"{job['id']}: stages do not hold every GPU once in {lay['pp']} stages")
        if any(len(st) != lay["dp"] * lay["tp"] for st in lay["stages"]):
            fail(v, f"{job['id']}: a stage does not hold dp x tp GPUs")
        for ip in gpus:
            if ip not in gpu_rows:
                fail(v, f"{job['id']}: GPU {ip} not a gpu row of topology.csv")
            if ip in all_gpus:
                fail(v, f"GPU {ip} in two jobs")
            all_gpus.add(ip)
            job_of[ip] = job["id"]
        if job["hosts"] != [gpu_rows[ip]["host"] for ip in gpus]:
            fail(v, f"{job['id']}: hosts differ from topology.csv")
    if set(gpu_rows) != all_gpus:
        fail(v, f"topology GPUs {sorted(set(gpu_rows) - all_gpus)} belong to no job")
    seen = set()
    for p in truth["pairs"]:
        key = tuple(sorted((p["a"], p["b"])))
        if p["label"] not in ("dp", "pp", "tp"):
            fail(v, f"pair {key}: label {p['label']!r}")
        if key in seen or p["a"] == p["b"]:
            fail(v, f"pair {key} listed twice or with itself")
        seen.add(key)
        if job_of.get(p["a"]) != p["job"] or job_of.get(p["b"]) != p["job"]:
            fail(v, f"pair {key}: not both GPUs of {p['job']}")
    if not truth["pairs"]:
        fail(v, "no truth pair")
    timelines = {(t["gpu"], t["job"]): t["steps"] for t in truth["timelines"]}
    if set(g for g, _ in timelines) != all_gpus:
        fail(v, "timelines do not cover exactly the GPUs")
    for (gpu, job), steps in timelines.items():
        if len(steps) < MIN_STEPS - 1:
            fail(v, f"{gpu}: {len(steps)} truth steps, expected >= {MIN_STEPS - 1}")
        for a, b in zip(steps, steps[1:]):
            if a["end_ns"] != b["start_ns"]:
                fail(v, f"{gpu}: steps not contiguous at {a['end_ns']}")
        for s in steps:
            if not (truth["start_ns"] <= s["start_ns"] < s["end_ns"] <= truth["end_ns"]):
                fail(v, f"{gpu}: step {s} outside the capture or empty")
    for f in truth["faults"]:
        if f["kind"] not in ("straggler", "degraded_link") or f["cause"] not in ("gpu", "network"):
            fail(v, f"fault {f['id']}: kind {f['kind']} cause {f['cause']}")
        if not f["gpus"] or any(g not in all_gpus for g in f["gpus"]):
            fail(v, f"fault {f['id']}: GPUs {f['gpus']}")
        if not truth["start_ns"] <= f["start_ns"] < f["end_ns"] <= truth["end_ns"]:
            fail(v, f"fault {f['id']}: span outside the capture")
    if meta.get("tcpdump_dropped_by_kernel") != 0:
        fail(v, f"meta.json: tcpdump dropped {meta.get('tcpdump_dropped_by_kernel')} packets")
    if meta.get("truth_steps") != sum(len(s) for s in timelines.values()):
        fail(v, "meta.json truth_steps differs from truth.json")


def check_wire(v, d, truth):
    """Message sizes per truth pair from the capture; returns {kind: [median payloads]}."""
    _, role, msgs, parsed, unparsed, window, _ = wire_summary.summarize(d)
    if parsed < MIN_PARSED_FRACTION * (parsed + unparsed):
        fail(v, f"only {parsed / max(parsed + unparsed, 1):.3f} of the payload bytes read as "
                f"gloo messages (expected >= {MIN_PARSED_FRACTION})")
    sizes = {}
    for m in wire_summary.training_data(role, msgs, window):
        sizes.setdefault(tuple(sorted((m["src"], m["dst"]))), []).append(m["bytes"])
    medians = {}
    for p in truth["pairs"]:
        got = sizes.get(tuple(sorted((p["a"], p["b"]))))
        if not got:
            fail(v, f"{p['label']} pair {p['a']} - {p['b']}: no data message read")
        med = statistics.median(got)
        if med < MIN_MEDIAN_MESSAGE_BYTES[p["label"]]:
            fail(v, f"{p['label']} pair {p['a']} - {p['b']}: median message {med:.0f} bytes, "
                    f"expected >= {MIN_MEDIAN_MESSAGE_BYTES[p['label']]}")
        medians.setdefault(p["label"], []).append(med)
    return medians


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("corpus")
    ap.add_argument("work")
    ap.add_argument("--expect-one-job", action="store_true")
    ap.add_argument("variants", nargs="*")
    args = ap.parse_intermixed_args()
    variants = args.variants or sorted(
        d for d in os.listdir(args.corpus) if os.path.isdir(os.path.join(args.corpus, d)))
    if not variants:
        sys.exit(f"FAIL: no variant in {args.corpus}")
    for v in variants:
        d = os.path.join(args.corpus, v)
        for name in ("capture.pcap.zst", "topology.csv", "truth.json", "meta.json"):
            if not os.path.isfile(os.path.join(d, name)):
                fail(v, f"{name} missing")
        truth = json.load(open(os.path.join(d, "truth.json")))
        meta = json.load(open(os.path.join(d, "meta.json")))
        with open(os.path.join(d, "topology.csv")) as f:
            topo = {r["ip"]: r for r in csv.DictReader(f)}
        check_truth(v, truth, topo, meta)

        w = os.path.join(args.work, v)
        os.makedirs(w, exist_ok=True)
        report_path = os.path.join(w, "report.json")
        res = subprocess.run([args.binary, "analyze", os.path.join(d, "capture.pcap.zst"),
                              "--topology", os.path.join(d, "topology.csv"), "--report",
                              report_path, "--timelines"], capture_output=True, text=True)
        if res.returncode != 0:
            fail(v, f"analyze exited {res.returncode}: {res.stderr.strip()[-400:]}")
        report = json.load(open(report_path))
        inp = report["input"]
        if inp.get("records_read", 0) <= 0:
            fail(v, f"no record read: {inp}")
        bad = {k: n for k, n in inp.items() if n and ("bad" in k or k.startswith("pcap_file"))}
        if bad:
            fail(v, f"bad input counted: {bad}")
        res = subprocess.run([args.binary, "eval", "--truth", os.path.join(d, "truth.json"),
                              "--report", report_path, "--json"], capture_output=True, text=True)
        if res.returncode != 0:
            fail(v, f"eval exited {res.returncode}: {res.stderr.strip()[-400:]}")
        json.loads(res.stdout)
        if args.expect_one_job:
            truth_gpus = sorted(g for j in truth["jobs"] for g in j["gpus"])
            jobs = [sorted(j["gpus"]) for j in report["jobs"]]
            if jobs != [truth_gpus]:
                fail(v, f"analyze found jobs {jobs}, expected exactly one with {truth_gpus}")
        medians = check_wire(v, d, truth)
        sizes = ", ".join(f"{k} {min(m) / 1024:.0f}" + (f"-{max(m) / 1024:.0f}" if max(m) > min(m)
                                                        else "")
                          for k, m in sorted(medians.items()))
        steps = sum(len(t["steps"]) for t in truth["timelines"])
        print(f"ok {v}: {inp['records_read']} records from "
              f"{inp.get('pcap_packets', '?')} packets, {len(truth['jobs'])} jobs, "
              f"{sum(len(j['gpus']) for j in truth['jobs'])} GPUs, {len(truth['pairs'])} pairs, "
              f"{steps} truth steps, {len(truth['faults'])} faults, report "
              f"{len(report['jobs'])} jobs; median message KiB per pair: {sizes}")


if __name__ == "__main__":
    main()
