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

# A pair carried tensor data if it moved at least this many TCP payload bytes per training step
# on average. Handshakes and rendezvous happen before the first step; the smallest tensor
# message of any variant is a 64x512 float activation (128 KiB) per micro-batch.
MIN_BYTES_PER_STEP = 4096


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


def label_of(job, ra, rb):
    sa, da, ta = V.coords(job, ra)
    sb, db, tb = V.coords(job, rb)
    if sa == sb and ta == tb and da != db:
        return "dp"
    if abs(sa - sb) == 1 and da == db and ta == tb:
        return "pp"
    if sa == sb and da == db and ta != tb:
        return "tp"
    return None


def flowlet_rates(packets, ip, lo_ns, hi_ns, gap_ns=1_000_000, min_bytes=64 << 10):
    """Bytes/s of the flowlets (1 ms gap, per direction of a connection) to or from `ip` that
    start in [lo_ns, hi_ns) and carry at least min_bytes."""
    open_ = {}
    rates = []

    def close(fl):
        if fl[2] >= min_bytes and fl[1] > fl[0] and lo_ns <= fl[0] < hi_ns:
            rates.append(fl[2] * 1e9 / (fl[1] - fl[0]))

    for (t, src, dst, sport, dport, payload) in packets:
        if payload <= 0 or ip not in (src, dst):
            continue
        key = (src, dst, sport, dport)
        fl = open_.get(key)
        if fl and t - fl[1] > gap_ns:
            close(fl)
            fl = None
        if fl is None:
            open_[key] = [t, t, payload]
        else:
            fl[1], fl[2] = t, fl[2] + payload
    for fl in open_.values():
        close(fl)
    return rates


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
    torch_version = None
    for j in variant["jobs"]:
        for r in range(j["dp"] * j["pp"] * j["tp"]):
            ev = read_log(os.path.join(args.work, "logs", f"{j['name']}-{r}.jsonl"))
            steps = {e["step"]: e["end_ns"] for e in ev if e["event"] == "step"}
            if sorted(steps) != list(range(j["steps"])):
                raise SystemExit(f"{j['name']} rank {r}: logged steps {sorted(steps)[:3]}... "
                                 f"({len(steps)}), expected 0..{j['steps'] - 1}")
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
        (ja, ra), (jb, rb) = rank_of_ip[ipa], rank_of_ip[ipb]
        job = V.job_config(args.variant, ja)
        label = label_of(job, ra, rb)
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
        # The slowdown as measured: median rate of the host's large flowlets outside / inside.
        train_lo = min(w[0] for w in windows.values())
        train_hi = max(w[1] for w in windows.values())
        inside = flowlet_rates(packets, ip, lo, hi)
        outside = flowlet_rates(packets, ip, train_lo, lo) + flowlet_rates(packets, ip, hi,
                                                                            train_hi)
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
