#!/usr/bin/env python3
"""What a real-traffic corpus variant carries on the wire, message by message.

gloo's TCP transport frames every message with a 48-byte preamble (little-endian 64-bit words:
nbytes = preamble + payload, opcode, slot, offset, length, roffset): opcode 0 writes into a
registered buffer, 1 sends to an unbound buffer (send/recv and the collectives of this torch),
2 / 3 announce that a send / a receive is ready (48 bytes, no payload). The capture keeps the first
bytes of every packet, enough for nbytes and opcode, so a message whose preamble starts a packet
can be read; the preamble of a message that starts inside a packet (after the end of the
previous message) is beyond the snapshot length: those bytes are counted as unparsed, and the
stream is read again from the next packet that starts with a preamble.

Prints, per pair kind (dp / pp / tp, from the script's groups, as build_truth.py labels pairs):
the pairs, the data messages (payload > 0) per step and pair during training, their payload
sizes, the bytes per step and pair, and the fraction of the GPU pairs' payload bytes whose
messages were read. --directions: data messages and bytes per step of every direction of every
pair; --step K lists every message of truth step K (of the job's rank 0); --crossing counts, on
the PP pairs, the activations whose transfer overlaps a gradient's on the same pair;
--step-ends: how far the truth step ends lie after each rank's last packet of the step.

Usage: wire_summary.py VARIANT_DIR [--directions] [--step K] [--crossing] [--json] [--step-ends]
"""
import argparse
import bisect
import collections
import json
import os
import statistics
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variants as V  # noqa: E402

PREAMBLE_BYTES = 48
OPCODES = {0: "buffer", 1: "send", 2: "send-ready", 3: "recv-ready"}


def read_packets(path):
    """[(t_ns, src, dst, sport, dport, seq, payload_len, first payload bytes)] of the IPv4 TCP
    packets of a pcap (or pcap.zst) file."""
    if path.endswith(".zst"):
        data = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    else:
        with open(path, "rb") as f:
            data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    scale = {0xA1B23C4D: 1, 0xA1B2C3D4: 1000}.get(magic)
    if scale is None:
        raise SystemExit(f"{path}: not a little-endian pcap file (magic {magic:#x})")
    off, n, out = 24, len(data), []
    hdr = struct.Struct("<IIII")
    while off + 16 <= n:
        sec, frac, incl, _ = hdr.unpack_from(data, off)
        pkt, off = off + 16, off + 16 + incl
        if incl < 34 or data[pkt + 12:pkt + 14] != b"\x08\x00" or data[pkt + 23] != 6:
            continue
        ip = pkt + 14
        ihl = (data[ip] & 0x0F) * 4
        total = (data[ip + 2] << 8) | data[ip + 3]
        tcp = ip + ihl
        if pkt + incl < tcp + 20:
            continue
        thl = (data[tcp + 12] >> 4) * 4
        sport, dport, seq = struct.unpack_from(">HHI", data, tcp)
        src = ".".join(str(b) for b in data[ip + 12:ip + 16])
        dst = ".".join(str(b) for b in data[ip + 16:ip + 20])
        out.append((sec * 1_000_000_000 + frac * scale, src, dst, sport, dport, seq,
                    total - ihl - thl, data[tcp + thl:pkt + incl]))
    return out


def preamble(head):
    """(nbytes, opcode) if `head` starts with a plausible gloo preamble, else None."""
    if len(head) < 16:
        return None
    nbytes, opcode = struct.unpack_from("<QQ", head, 0)
    if opcode not in OPCODES or not PREAMBLE_BYTES <= nbytes < (1 << 32):
        return None
    if opcode >= 2 and nbytes != PREAMBLE_BYTES:
        return None
    return nbytes, opcode


def messages(packets, ips, skip_ports):
    """gloo messages between the given IPs: dicts with src, dst, opcode, bytes (payload, preamble
    excluded), t0_ns / t1_ns (first / last packet); and the payload bytes read / not read."""
    streams = {}  # (src, sport, dst, dport) -> [next boundary (absolute seq), open message]
    out = []
    parsed = unparsed = 0
    for (t, src, dst, sport, dport, seq, length, head) in packets:
        if length <= 0 or src not in ips or dst not in ips or sport in skip_ports or \
                dport in skip_ports:
            continue
        key = (src, sport, dst, dport)
        st = streams.setdefault(key, [None, None])
        boundary, msg = st
        if boundary is not None:
            ahead = (seq - boundary) & 0xFFFFFFFF
            if ahead >= (1 << 31):  # inside the current message (before its end)
                if msg is not None:
                    msg["t1_ns"] = t
                end = (seq + length - boundary) & 0xFFFFFFFF
                if 0 < end < (1 << 31):  # the packet runs past the message end: lost
                    st[0], st[1] = None, None
                parsed += length
                continue
            if ahead != 0:  # a gap (retransmission or lost packet): lost
                boundary = None
        p = preamble(head)
        if p is None:
            st[0], st[1] = None, None
            unparsed += length
            continue
        nbytes, opcode = p
        msg = {"src": src, "dst": dst, "opcode": opcode, "bytes": nbytes - PREAMBLE_BYTES,
               "t0_ns": t, "t1_ns": t}
        out.append(msg)
        parsed += length
        if length > nbytes:  # the next preamble starts inside this packet, beyond the snapshot
            st[0], st[1] = None, None
            continue
        st[0] = (seq + nbytes) & 0xFFFFFFFF
        st[1] = msg if length < nbytes else None
    return out, parsed, unparsed


def summarize(variant_dir):
    truth = json.load(open(os.path.join(variant_dir, "truth.json")))
    variant = truth["scenario"]
    packets = read_packets(os.path.join(variant_dir, "capture.pcap.zst"))
    role = {}  # ip -> (job config, rank)
    for j in truth["jobs"]:
        cfg = V.job_config(variant, j["id"])
        for r, ip in enumerate(j["gpus"]):
            role[ip] = (cfg, r, j["id"])
    skip = {V.MASTER_PORT + i for i in range(len(truth["jobs"]))}
    msgs, parsed, unparsed = messages(packets, set(role), skip)
    # The training window of each job, as build_truth.py counts pair bytes.
    window, steps = {}, {}
    for t in truth["timelines"]:
        lo, hi = t["steps"][0]["start_ns"], t["steps"][-1]["end_ns"]
        w = window.get(t["job"], (lo, hi))
        window[t["job"]] = (min(w[0], lo), max(w[1], hi))
        steps[t["job"]] = len(t["steps"])
    return truth, role, msgs, parsed, unparsed, window, steps


def label(role, a, b):
    (ja, ra, ia), (_, rb, ib) = role[a], role[b]
    if ia != ib:
        return "cross-job"
    return V.pair_label(ja, ra, rb) or "none"


def training_data(role, msgs, window):
    """The data messages (payload > 0; gloo's barrier sends 0 bytes) of the training window."""
    out = []
    for m in msgs:
        lo, hi = window[role[m["src"]][2]]
        if m["opcode"] in (0, 1) and m["bytes"] > 0 and lo <= m["t0_ns"] <= hi:
            out.append(m)
    return out


def kinds_table(role, data, steps):
    """Per pair kind: pairs, data messages and bytes per step and pair, payload sizes."""
    per_pair = collections.defaultdict(list)
    for m in data:
        per_pair[tuple(sorted((m["src"], m["dst"])))].append(m)
    rows = {}
    for pair, ms in per_pair.items():
        kind = label(role, *pair)
        n_steps = steps[role[pair[0]][2]]
        r = rows.setdefault(kind, {"pairs": 0, "msgs_per_step": [], "bytes_per_step": [],
                                   "sizes": collections.Counter()})
        r["pairs"] += 1
        r["msgs_per_step"].append(len(ms) / n_steps)
        r["bytes_per_step"].append(sum(m["bytes"] for m in ms) / n_steps)
        for m in ms:
            r["sizes"][m["bytes"]] += 1
    return rows


def print_step_ends(variant_dir):
    """How far each truth step end (the optimizer's end, which the network does not see) lies
    after the rank's last payload packet of the step (its last communication, the gradient
    synchronisation's end in most variants): opt_ms plus the optimizer's real math if the
    emulation is exact; its spread over the steps is the jitter the network cannot see."""
    truth = json.load(open(os.path.join(variant_dir, "truth.json")))
    store = {V.MASTER_PORT + i for i in range(len(truth["jobs"]))} | {V.STORAGE_PORT}
    times = collections.defaultdict(list)
    for (t, src, dst, sport, dport, _, length, _) in read_packets(
            os.path.join(variant_dir, "capture.pcap.zst")):
        if length > 0 and sport not in store and dport not in store:
            times[src].append(t)
            times[dst].append(t)
    gaps = []
    for tl in truth["timelines"]:
        ts = sorted(times[tl["gpu"]])
        for s in tl["steps"]:
            i = bisect.bisect_left(ts, s["end_ns"]) - 1
            if i >= 0 and ts[i] > s["start_ns"]:
                gaps.append((s["end_ns"] - ts[i]) / 1e6)
    gaps.sort()

    def q(p):
        return gaps[min(len(gaps) - 1, int(p * len(gaps)))]
    print(f"{truth['scenario']}: {len(gaps)} truth steps; step end after the rank's last packet, "
          f"ms: p1 {q(0.01):.1f} p50 {q(0.5):.1f} p99 {q(0.99):.1f} max {gaps[-1]:.1f}")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variant_dir")
    ap.add_argument("--step", type=int, default=None)
    ap.add_argument("--crossing", action="store_true")
    ap.add_argument("--directions", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--step-ends", action="store_true")
    args = ap.parse_args()
    if args.step_ends:
        return print_step_ends(args.variant_dir)
    truth, role, msgs, parsed, unparsed, window, steps = summarize(args.variant_dir)
    data = training_data(role, msgs, window)
    rows = kinds_table(role, data, steps)
    total = parsed + unparsed
    if args.json:
        print(json.dumps({"parsed_fraction": parsed / total if total else None,
                          "kinds": {k: {"pairs": r["pairs"],
                                        "msgs_per_step": statistics.median(r["msgs_per_step"]),
                                        "bytes_per_step": statistics.median(r["bytes_per_step"]),
                                        "sizes": dict(r["sizes"])}
                                    for k, r in rows.items()}}, indent=1))
        return 0
    print(f"{truth['scenario']}: {len(msgs)} gloo messages; {parsed / max(total, 1):.4f} of the "
          f"GPU pairs' {total} payload bytes read (TCPStore excluded)")
    print("kind  pairs  data msgs/step/pair  payload bytes per message (count)"
          "                      MiB/step/pair")
    for kind, r in sorted(rows.items()):
        sizes = ", ".join(f"{b} ({n})" for b, n in r["sizes"].most_common(4))
        more = len(r["sizes"]) - 4
        print(f"{kind:<5} {r['pairs']:>5}  {statistics.median(r['msgs_per_step']):>8.1f} "
              f"(min {min(r['msgs_per_step']):.1f})  {sizes}{f' +{more} sizes' if more > 0 else ''}"
              f"  {statistics.median(r['bytes_per_step']) / (1 << 20):.2f} "
              f"({min(r['bytes_per_step']) / (1 << 20):.2f}-"
              f"{max(r['bytes_per_step']) / (1 << 20):.2f})")
    rank_of = {ip: f"r{role[ip][1]}" for ip in role}
    if args.directions:
        per_dir = collections.defaultdict(lambda: [0, 0])
        for m in data:
            d = per_dir[(m["src"], m["dst"])]
            d[0] += 1
            d[1] += m["bytes"]
        print("direction  kind  data msgs/step  MiB/step")
        for (a, b), (n, nbytes) in sorted(per_dir.items(), key=lambda kv: (
                role[kv[0][0]][2], role[kv[0][0]][1], role[kv[0][1]][1])):
            k = steps[role[a][2]]
            print(f"{role[a][2]} {rank_of[a]:>3} -> {rank_of[b]:<3} {label(role, a, b):<4} "
                  f"{n / k:8.1f} {nbytes / k / (1 << 20):9.2f}")
    if args.step is not None:
        tl = next(t for t in truth["timelines"] if t["gpu"] == truth["jobs"][0]["gpus"][0])
        s = tl["steps"][args.step]
        print(f"step {args.step} of {tl['gpu']}: {(s['end_ns'] - s['start_ns']) / 1e6:.1f} ms")
        for m in msgs:
            if s["start_ns"] <= m["t0_ns"] < s["end_ns"]:
                print(f"  {(m['t0_ns'] - s['start_ns']) / 1e6:9.3f} ms "
                      f"+{(m['t1_ns'] - m['t0_ns']) / 1e6:6.3f}  {rank_of[m['src']]:>3} -> "
                      f"{rank_of[m['dst']]:<3} {label(role, m['src'], m['dst']):<4} "
                      f"{OPCODES[m['opcode']]:<10} {m['bytes']}")
    if args.crossing:
        by_pair = collections.defaultdict(lambda: ([], []))
        for m in msgs:
            if m["opcode"] != 1 or label(role, m["src"], m["dst"]) != "pp":
                continue
            cfg, rs, _ = role[m["src"]]
            rd = role[m["dst"]][1]
            forward = V.coords(cfg, rs)[0] < V.coords(cfg, rd)[0]
            by_pair[tuple(sorted((m["src"], m["dst"])))][0 if forward else 1].append(m)
        for pair, (acts, grads) in sorted(by_pair.items()):
            crossed = sum(1 for a in acts if any(g["t0_ns"] <= a["t1_ns"] and a["t0_ns"] <=
                                                 g["t1_ns"] for g in grads))
            starts = sorted(g["t0_ns"] for g in grads)
            near = sum(1 for a in acts if min((abs(a["t0_ns"] - g) for g in starts),
                                              default=1 << 62) < 1_000_000)
            print(f"pp {rank_of[pair[0]]}-{rank_of[pair[1]]}: {len(acts)} activations, "
                  f"{len(grads)} gradients; {crossed} activations overlap a gradient on the "
                  f"wire, {near} start within 1 ms of one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
