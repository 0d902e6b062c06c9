#!/usr/bin/env python3
"""Writes truth.json, topology.csv and meta.json of one real-traffic corpus variant.

Inputs (make_corpus.sh's work directory): logs/<job>-<rank>.jsonl written by train.py, the
uncompressed capture.pcap, tcpdump.err (tcpdump's own counts) and link.json (degraded-link
variants: when tc took effect and was removed, measured by make_corpus.sh).

Truth (docs/truth-schema.md, version 1; docs/realtraffic.md):
  - jobs: the variant's jobs, GPUs by IP, layout with stages (stage 0 first, each listing every
    GPU of the stage).
  - timelines: step k of a rank runs from the end of its optimizer step k-1 to the end of its
    optimizer step k, as logged by the rank (time.time_ns(), the clock tcpdump uses).
  - pairs: GPU pairs of one job that carried tensor data across the bridge during training
    (between the earliest end of optimizer step 0 and the latest end of the last step), counted
    from the capture; the TCPStore rendezvous connections are not tensor data. The label comes
    from the script's groups: same pipeline stage and TP index, another DP index -> "dp";
    adjacent stages, same DP and TP index -> "pp"; same stage and DP index -> "tp". A GPU pair
    with tensor bytes that fits none of these is an error (the variant does not do what it
    claims).
  - faults: the straggler's span from its own step log; the degraded link from link.json.
Usage: build_truth.py --variant V --work DIR --out DIR --capture-start-ns N --capture-end-ns N
                      [--snaplen N] [--seconds N] [--command TEXT]
"""
import argparse
import collections
import datetime
import json
import os
import re
import statistics
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variants as V  # noqa: E402
import wire_summary  # noqa: E402

# A pair carried tensor data if it moved at least this many TCP payload bytes per training step
# on average. Handshakes and rendezvous happen before the first step and the final barrier moves
# a few hundred bytes; every pair that carries tensors moves at least 1 MiB per step (two
# 512 KiB messages, activations or gradient chunks).
MIN_BYTES_PER_STEP = 64 << 10


def read_pcap(path):
    """Yields (t_ns, src, dst, sport, dport, payload_bytes) for IPv4 TCP packets; counts others.

    Payload length comes from the IP total length (the capture is cut at the snaplen)."""
    counts = collections.Counter()
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic == 0xA1B23C4D:
        endian, scale = "<", 1
    elif magic == 0xA1B2C3D4:
        endian, scale = "<", 1000
    else:
        raise SystemExit(f"{path}: not a little-endian pcap file (magic {magic:#x})")
    linktype = struct.unpack_from(endian + "I", data, 20)[0]
    if linktype != 1:
        raise SystemExit(f"{path}: link type {linktype}, expected Ethernet (1)")
    off = 24
    hdr = struct.Struct(endian + "IIII")
    out = []
    n = len(data)
    while off + 16 <= n:
        sec, frac, incl, _orig = hdr.unpack_from(data, off)
        pkt = off + 16
        off = pkt + incl
        counts["packets"] += 1
        if incl < 34 or data[pkt + 12:pkt + 14] != b"\x08\x00":
            counts["non_ipv4"] += 1
            continue
        ip = pkt + 14
        ihl = (data[ip] & 0x0F) * 4
        total = (data[ip + 2] << 8) | data[ip + 3]
        proto = data[ip + 9]
        if proto != 6 or incl < 14 + ihl + 20:
            counts["non_tcp"] += 1
            continue
        tcp = ip + ihl
        thl = (data[tcp + 12] >> 4) * 4
        payload = total - ihl - thl
        src = ".".join(str(b) for b in data[ip + 12:ip + 16])
        dst = ".".join(str(b) for b in data[ip + 16:ip + 20])
        sport, dport = struct.unpack_from(">HH", data, tcp)
        out.append((sec * 1_000_000_000 + frac * scale, src, dst, sport, dport, payload))
    return out, counts


def read_log(path):
    events = []
    with open(path) as f:
        for line in f:
            if line.strip():
                events.append(json.loads(line))
    return events


def message_rates(msgs, ip, keep):
    """Bytes/s of the gloo messages of >= 256 KiB payload to or from `ip` for which
    keep(t0_ns, t1_ns) holds, each from its first to its last packet."""
    return [m["bytes"] * 1e9 / (m["t1_ns"] - m["t0_ns"]) for m in msgs
            if m["bytes"] >= (256 << 10) and ip in (m["src"], m["dst"]) and
            m["t1_ns"] > m["t0_ns"] and keep(m["t0_ns"], m["t1_ns"])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--capture-start-ns", type=int, required=True)
    ap.add_argument("--capture-end-ns", type=int, required=True)
    ap.add_argument("--snaplen", type=int, default=0)
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--command", default="")
    args = ap.parse_args()
    variant = V.VARIANTS[args.variant]
    hosts = V.hosts_of(args.variant)
    ip_of = {(j, r): ip for (_, ip, kind, j, r) in hosts if kind == "gpu"}
    host_of_ip = {ip: name for (name, ip, _, _, _) in hosts}

    with open(os.path.join(args.out, "topology.csv"), "w") as f:
        f.write("ip,host,gpu,leaf,kind\n")
        for (name, ip, kind, _, _) in hosts:
            f.write(f"{ip},{name},{0 if kind == 'gpu' else ''},{V.BRIDGE},{kind}\n")

    # Step logs.
    logs = {}
    cpu = {}
    late = {}
    torch_version = None
    for j in variant["jobs"]:
        for r in range(j["dp"] * j["pp"] * j["tp"]):
            ev = read_log(os.path.join(args.work, "logs", f"{j['name']}-{r}.jsonl"))
            steps = {e["step"]: e["end_ns"] for e in ev if e["event"] == "step"}
            if sorted(steps) != list(range(j["steps"])):
                raise SystemExit(f"{j['name']} rank {r}: logged steps {sorted(steps)[:3]}... "
                                 f"({len(steps)}), expected 0..{j['steps'] - 1}")
            cpu[(j["name"], r)] = [e["cpu_ms"] for e in ev if e["event"] == "step"][1:]
            late[(j["name"], r)] = [e["late_ms"] for e in ev if e["event"] == "step"][1:]
            starts = [e for e in ev if e["event"] == "start"]
            torch_version = starts[0]["torch"] if starts else torch_version
            logs[(j["name"], r)] = steps

    start_ns, end_ns = args.capture_start_ns, args.capture_end_ns
    timelines = []
    for (jname, r), steps in sorted(logs.items(), key=lambda kv: kv[0]):
        st = [{"start_ns": steps[k - 1], "end_ns": steps[k]} for k in range(1, len(steps))
              if start_ns <= steps[k - 1] and steps[k] <= end_ns]
        timelines.append({"gpu": ip_of[(jname, r)], "job": jname, "steps": st})
    timelines.sort(key=lambda t: tuple(int(x) for x in t["gpu"].split(".")))

    # Pairs from the capture.
    packets, pcounts = read_pcap(os.path.join(args.work, "capture.pcap"))
    rank_of_ip = {ip: key for key, ip in ip_of.items()}
    store_ports = {V.MASTER_PORT + i for i in range(len(variant["jobs"]))}
    pair_bytes = collections.defaultdict(lambda: collections.Counter())
    windows = {}
    for j in variant["jobs"]:
        ends = [logs[(j["name"], r)] for r in range(j["dp"] * j["pp"] * j["tp"])]
        windows[j["name"]] = (min(e[0] for e in ends), max(e[j["steps"] - 1] for e in ends))
    for (t, src, dst, sport, dport, payload) in packets:
        if payload <= 0:
            continue
        a, b = rank_of_ip.get(src), rank_of_ip.get(dst)
        if a is None or b is None:
            continue
        phase = "store" if (sport in store_ports or dport in store_ports) else "data"
        if phase == "data":
            if a[0] != b[0]:
                raise SystemExit(f"tensor bytes between jobs: {src} -> {dst}")
            lo, hi = windows[a[0]]
            phase = "train" if lo <= t <= hi else "setup"
        key = tuple(sorted((src, dst), key=lambda s: tuple(int(x) for x in s.split("."))))
        pair_bytes[key][phase] += payload

    pairs, pair_table = [], []
    ip_key = lambda s: tuple(int(x) for x in s.split("."))  # noqa: E731
    for (ipa, ipb), c in sorted(pair_bytes.items(), key=lambda kv: [ip_key(s) for s in kv[0]]):
        (ja, ra), (_, rb) = rank_of_ip[ipa], rank_of_ip[ipb]
        job = V.job_config(args.variant, ja)
        label = V.pair_label(job, ra, rb)
        data = c["train"] >= MIN_BYTES_PER_STEP * job["steps"]
        pair_table.append({"a": ipa, "b": ipb, "job": ja, "ranks": [ra, rb],
                           "group": label, "train_bytes": c["train"], "setup_bytes": c["setup"],
                           "store_bytes": c["store"], "truth": data})
        if not data:
            continue
        if label is None:
            raise SystemExit(f"{ipa} (rank {ra}) - {ipb} (rank {rb}) of {ja} moved {c['train']} "
                             "bytes during training but share no DP, PP or TP group")
        pairs.append({"a": ipa, "b": ipb, "job": ja, "label": label})

    jobs = []
    for j in variant["jobs"]:
        n = j["dp"] * j["pp"] * j["tp"]
        gpus = [ip_of[(j["name"], r)] for r in range(n)]
        stages = [[ip_of[(j["name"], V.rank_of(j, s, d, t))] for d in range(j["dp"])
                   for t in range(j["tp"])] for s in range(j["pp"])]
        jobs.append({
            "id": j["name"], "gpus": gpus, "hosts": [host_of_ip[g] for g in gpus],
            "layout": {"dp": j["dp"], "pp": j["pp"], "tp": j["tp"],
                       "microbatches": j["microbatches"] if j["pp"] > 1 else 1,
                       "schedule": j["schedule"], "zero": j["mode"] == "zero",
                       "mode": j["mode"], "stages": stages}})

    faults = []
    for j in variant["jobs"]:
        if not j["straggler"]:
            continue
        r, first, last, factor = j["straggler"]
        steps = logs[(j["name"], r)]
        faults.append({"id": f"f{len(faults)}", "kind": "straggler", "cause": "gpu",
                       "gpus": [ip_of[(j["name"], r)]], "switches": [], "jobs": [j["name"]],
                       "start_ns": steps[first - 1], "end_ns": steps[last], "factor": factor})
    link_path = os.path.join(args.work, "link.json")
    if "link" in variant:
        if not os.path.exists(link_path):
            raise SystemExit("degraded-link variant without link.json (tc never applied?)")
        link = json.load(open(link_path))
        ip = link["ip"]
        lo, hi = link["on_ns"][0], link["off_ns"][1]
        jobs_of = sorted({rank_of_ip[ip][0]})
        # The slowdown as measured: the median transfer rate of the host's tensor messages
        # (gloo messages read from the capture) during training outside the span over inside.
        train_lo = min(w[0] for w in windows.values())
        train_hi = max(w[1] for w in windows.values())
        msgs, _, _ = wire_summary.messages(
            wire_summary.read_packets(os.path.join(args.work, "capture.pcap")), set(rank_of_ip),
            store_ports)
        inside = message_rates(msgs, ip, lambda t0, t1: lo <= t0 and t1 <= hi)
        outside = message_rates(msgs, ip, lambda t0, t1: train_lo <= t0 <= train_hi and
                                (t1 < lo or t0 > hi))
        factor = (statistics.median(outside) / statistics.median(inside)
                  if inside and outside else None)
        faults.append({"id": f"f{len(faults)}", "kind": "degraded_link", "cause": "network",
                       "gpus": [ip], "switches": [V.BRIDGE], "jobs": jobs_of,
                       "start_ns": lo, "end_ns": hi,
                       "factor": round(factor, 2) if factor else None,
                       "rate": link["rate"]})

    truth = {"version": 1, "scenario": args.variant, "seed": 0, "start_ns": start_ns,
             "end_ns": end_ns, "packets": pcounts["packets"], "jobs": jobs,
             "pairs": pairs, "timelines": timelines, "faults": faults}
    with open(os.path.join(args.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")

    tcpdump = open(os.path.join(args.work, "tcpdump.err")).read()
    m = re.search(r"(\d+) packets dropped by kernel", tcpdump)
    dropped = int(m.group(1)) if m else None
    captured = re.search(r"(\d+) packets captured", tcpdump)
    if dropped != 0:
        raise SystemExit(f"tcpdump dropped {dropped} packets (or did not say): {tcpdump}")
    meta = {
        "variant": args.variant,
        "command": args.command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch": torch_version,
        "kernel": os.uname().release,
        "snaplen": args.snaplen,
        "tcpdump_packets_captured": int(captured.group(1)) if captured else None,
        "tcpdump_dropped_by_kernel": dropped,
        "packets": pcounts["packets"],
        "non_ipv4_frames": pcounts["non_ipv4"],
        "steps_per_rank": {j["name"]: j["steps"] for j in variant["jobs"]},
        "truth_steps": sum(len(t["steps"]) for t in timelines),
        "seconds": args.seconds,
        # The machine's load average (1, 5, 15 min) when the capture ended: the emulated GPU
        # time is wall time, so a loaded machine wakes ranks late and blurs the truth.
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        # Per rank, over its truth steps: median step seconds and median CPU ms the rank's
        # process used per step (its real math, gloo and Python; the emulated GPU time sleeps).
        "step_s_median": {ip_of[k]: round(statistics.median(
            (v[i] - v[i - 1]) / 1e9 for i in range(1, len(v))), 4) for k, v in logs.items()},
        "step_cpu_ms_median": {ip_of[k]: round(statistics.median(v), 1) for k, v in cpu.items()
                               if v},
        # Per rank: the largest delay, over its truth steps, between the emulated GPU's end of
        # the optimizer (the logged step end) and the moment the process woke from it.
        "late_ms_max": {ip_of[k]: max(v) for k, v in late.items() if v},
        "pair_bytes": pair_table,
    }
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"{args.variant}: {len(jobs)} jobs, {len(pairs)} truth pairs, "
          f"{meta['truth_steps']} truth steps, {len(faults)} faults, "
          f"{pcounts['packets']} packets, 0 dropped")
    for p in pair_table:
        print(f"  {p['a']:>12} - {p['b']:<12} ranks {p['ranks']} {p['group'] or '-':>4} "
              f"train {p['train_bytes']:>11} setup {p['setup_bytes']:>9} "
              f"store {p['store_bytes']:>7} {'TRUTH' if p['truth'] else ''}")


if __name__ == "__main__":
    main()
