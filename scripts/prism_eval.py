"""Shared by scripts/evaluate.py (simulated scenarios) and scripts/evaluate_corpus.py (the
real-traffic corpus): run `llmprism analyze` then `llmprism eval --json` on one input."""
import json
import subprocess
import sys
import time

# The headline metrics of `llmprism eval --json`, in table order.
KEYS = ["jobs_exact_fraction", "jobs_ari", "pairs_accuracy", "layout_exact_fraction",
        "step_error_p50", "step_error_p99", "step_error_max", "steps_matched_fraction",
        "faults_precision", "faults_recall", "faults_localized_fraction", "faults_cause_fraction"]


def run(cmd):
    """stdout of cmd; exits with its stderr unless it returned 0 or 1 (1 = some bad records)."""
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode not in (0, 1):
        sys.exit(f"failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr}")
    return res.stdout


def analyze_and_eval(binary, inputs, topology, report, truth, window=None):
    """Runs analyze (timed) and eval; returns the eval JSON with "analyze_s" added."""
    cmd = [binary, "analyze", *inputs, "--topology", topology, "--report", report, "--timelines"]
    if window is not None:
        cmd += ["--window", f"{window:g}"]
    t0 = time.time()
    run(cmd)
    seconds = time.time() - t0
    m = json.loads(run([binary, "eval", "--truth", truth, "--report", report, "--json"]))
    m["analyze_s"] = seconds
    return m
