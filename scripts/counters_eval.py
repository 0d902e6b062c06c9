#!/usr/bin/env python3
"""Scores a counters-mode report.json against the simulator's truth.json (docs/counters.md).

Usage: counters_eval.py TRUTH.json REPORT.json  -> one JSON line:
  jobs_truth, jobs_exact (truth jobs whose host set equals a report job's), period_err_max
  (relative, over matched jobs; truth period = median true step), stalls / stalls_found (a
  job_stall of the matched job overlapping the stall), slow_servers / slow_found (a finding of the
  matched job overlapping the slow-server span), slow_localized (a server_out_of_step naming the
  slow host), false_findings (findings overlapping no fault of their job), false_warnings (those
  of severity warning or critical: what an operator is paged for), rhythms (iteration_rhythm
  findings: a job's checkpoint cadence, info), named (the servers server_out_of_step findings
  name, all jobs).
Sweep: counters_eval.py --sweep LLMPRISM OUTDIR  runs simulate + analyze over poll intervals and
scenarios and prints a Markdown table.
"""
import json, statistics, subprocess, sys, os


def score(truth, report):
    t_hosts = {j["id"]: frozenset(j["hosts"]) for j in truth["jobs"]}
    r_hosts = {j["id"]: frozenset(j["hosts"]) for j in report["jobs"]}
    period = {}
    for tl in truth["timelines"]:
        if tl["job"] not in period and tl["steps"]:
            period[tl["job"]] = statistics.median((s["end_ns"] - s["start_ns"]) / 1e9 for s in tl["steps"])
    r_period = {j["id"]: j["period_s"] for j in report["counters"]["jobs"]}
    match = {}
    for tj, hs in t_hosts.items():
        for rj, rh in r_hosts.items():
            if hs == rh:
                match[tj] = rj
    errs = [abs(r_period[match[tj]] - period[tj]) / period[tj] for tj in match if tj in period]
    # Host of each GPU address (the truth names GPUs).
    host_of = {}
    for j in truth["jobs"]:
        for g in j["gpus"]:
            pass
    out = {"jobs_truth": len(t_hosts), "jobs_exact": len(match),
           "period_err_max": max(errs) if errs else None,
           "stalls": 0, "stalls_found": 0, "slow_servers": 0, "slow_found": 0, "slow_localized": 0}
    fault_spans = {}
    stragglers = {}
    for f in truth["faults"]:
        job = f["jobs"][0] if f["jobs"] else None
        fault_spans.setdefault(job, []).append((f["start_ns"], f["end_ns"]))
        if f["kind"] == "stall":
            out["stalls"] += 1
            rj = match.get(job)
            if any(x["kind"] == "job_stall" and x["job"] == rj and x["start_ns"] < f["end_ns"] and
                   x["end_ns"] > f["start_ns"] for x in report["findings"]):
                out["stalls_found"] += 1
        elif f["kind"] == "straggler":
            stragglers.setdefault((job, f["start_ns"], f["end_ns"]), set()).update(f["gpus"])
    # A slow server = a straggler fault on all GPUs of one host (the truth lists them per GPU).
    gpu_host = {}
    for j in truth["jobs"]:
        per_host = len(j["gpus"]) // max(1, len(j["hosts"]))
        for i, g in enumerate(j["gpus"]):
            gpu_host[g] = j["hosts"][i // per_host]
    for (job, s, e), gpus in stragglers.items():
        hosts = {gpu_host.get(g) for g in gpus}
        out["slow_servers"] += 1
        rj = match.get(job)
        hits = [x for x in report["findings"] if x["job"] == rj and x["start_ns"] < e and x["end_ns"] > s]
        if hits:
            out["slow_found"] += 1
        if any(x["kind"] == "server_out_of_step" and set(x.get("hosts", [])) & hosts for x in hits):
            out["slow_localized"] += 1
    rev = {v: k for k, v in match.items()}
    false = false_warn = 0
    for x in report["findings"]:
        spans = fault_spans.get(rev.get(x["job"]), [])
        if not any(x["start_ns"] < e and x["end_ns"] > s for s, e in spans):
            false += 1
            false_warn += x["severity"] in ("warning", "critical")
    out["false_findings"] = false
    out["false_warnings"] = false_warn
    out["rhythms"] = sum(x["kind"] == "iteration_rhythm" for x in report["findings"])
    out["named"] = sorted({h for x in report["findings"] if x["kind"] == "server_out_of_step"
                           for h in x.get("hosts", [])})
    return out


def sweep(llmprism, outdir):
    rows = []
    cases = [("counters", p, p) for p in (0.1, 0.5, 1, 2, 5)] + [("counters", 0.5, 1)]
    cases += [("counters-short", 1, 1), ("counters-short", 0.5, 1), ("counters-long", 1, 1), ("counters-long", 5, 5)]
    cases += [("counters-ops", 1, 1), ("counters-ops", 0.5, 1)]
    print("| scenario | poll s | refresh s | jobs exact | period err max | stall found | slow server found (localized) | false findings (warning+) | rhythm | servers named |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for scen, poll, refresh in cases:
        d = os.path.join(outdir, f"{scen}-p{poll}-r{refresh}")
        subprocess.run([llmprism, "simulate", "--scenario", scen, "--emit", "counters", "--poll", str(poll),
                        "--refresh", str(refresh), "--out", d], check=True, capture_output=True)
        subprocess.run([llmprism, "analyze", os.path.join(d, "counters.csv"), "--topology",
                        os.path.join(d, "topology_ports.csv"), "--report", os.path.join(d, "report.json")],
                       check=True, capture_output=True)
        s = score(json.load(open(os.path.join(d, "truth.json"))), json.load(open(os.path.join(d, "report.json"))))
        pe = "-" if s["period_err_max"] is None else f"{100 * s['period_err_max']:.2f}%"
        print(f"| {scen} | {poll} | {refresh} | {s['jobs_exact']}/{s['jobs_truth']} | {pe} | "
              f"{s['stalls_found']}/{s['stalls']} | {s['slow_found']}/{s['slow_servers']} ({s['slow_localized']}) | "
              f"{s['false_findings']} ({s['false_warnings']}) | {s['rhythms']} | "
              f"{', '.join(s['named']) or '-'} |")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--sweep":
        sweep(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3:
        print(json.dumps(score(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))))
    else:
        sys.exit(__doc__)
