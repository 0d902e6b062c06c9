#!/usr/bin/env bash
# Our capture decoding against tshark's, on the scapy-built captures of tests/golden/ingest/scapy
# (gen.py beside them): tshark dissects every packet (RoCEv2 BTH/AETH, ERSPAN II/III, TCP, UDP)
# and an independent Python assembler applies the message / flowlet rules to tshark's fields; the
# records (endpoints, QP, observation point, first/last packet times, bytes, packets) must agree
# exactly with `ingest_dump pcap`, and so must the ACK/NAK/CNP/READ-request counts.
# Usage: scapy_tshark.sh INGEST_DUMP WORK_DIR
set -euo pipefail
dump=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)
data=$here/../golden/ingest/scapy
rm -rf "$dir"
mkdir -p "$dir"
command -v tshark >/dev/null || { echo "FAIL: tshark missing (run scripts/setup.sh)" >&2; exit 1; }

for f in roce erspan tcp; do
  "$dump" pcap "$data/$f.pcap" > "$dir/$f.ours.csv" 2> "$dir/$f.ours.stats"
  # -o: decode UDP 4791 as RoCE even when truncated; fields of every layer, '|' between repeats.
  tshark -r "$data/$f.pcap" -T fields -E separator=/t -E occurrence=a -E aggregator='|' \
    -e frame.time_epoch -e ip.src -e ip.dst -e ip.proto -e udp.srcport -e udp.dstport \
    -e udp.length -e tcp.srcport -e tcp.dstport -e tcp.len -e infiniband.bth.opcode \
    -e infiniband.bth.destqp -e infiniband.bth.padcnt -e infiniband.aeth.syndrome \
    -e erspan.spanid > "$dir/$f.tshark.tsv" 2> /dev/null
done

python3 - "$dir" <<'PY'
import csv, sys
from collections import Counter
d = sys.argv[1]

# Extension-header bytes after the BTH per RC opcode (IBTA vol. 1, 9.2): RETH 16, ImmDt 4,
# AETH 4, IETH 4. Kind: F first, M middle, L last, O only, or a control kind.
OPS = {0: ("F", 0), 1: ("M", 0), 2: ("L", 0), 3: ("L", 4), 4: ("O", 0), 5: ("O", 4),
       6: ("F", 16), 7: ("M", 0), 8: ("L", 0), 9: ("L", 4), 10: ("O", 16), 11: ("O", 20),
       12: ("read_request", 16), 13: ("F", 4), 14: ("M", 0), 15: ("L", 4), 16: ("O", 4),
       17: ("ack", 4), 129: ("cnp", 16)}

def ns(epoch):
    s, frac = epoch.split(".")
    return int(s) * 10**9 + int((frac + "000000000")[:9])

def last(v):
    return v.split("|")[-1] if v else ""

def reference(path, gap_ns=1_000_000):
    msgs, out, control = {}, [], Counter()
    flowlets = {}
    for row in open(path):
        f = row.rstrip("\n").split("\t")
        (t, src, dst, proto, usp, udp_, ulen, tsp, tdp, tlen, op, qp, pad, synd, span) = f
        t = ns(t)
        src_outer = src.split("|")[0]
        src, dst, proto = last(src), last(dst), int(last(proto))
        point = f"{src_outer}/erspan-{span.split('|')[0]}" if span else ""
        if op:
            op = int(last(op))
            kind, ext = OPS[op]
            if kind in ("ack", "cnp", "read_request"):
                if kind == "ack" and synd and int(last(synd)) & 0x60:
                    kind = "nak"
                control[kind] += 1
                continue
            b = int(last(ulen)) - 8 - 12 - ext - 4 - int(last(pad) or 0)
            key = (point, src, dst, int(last(qp), 16))
            sport = int(last(usp))
            if kind == "O":
                out.append((key, t, t, b, 1, sport))
            elif kind == "F":
                assert key not in msgs
                msgs[key] = [t, t, b, 1, sport]
            else:
                m = msgs[key]
                m[1], m[2], m[3] = t, m[2] + b, m[3] + 1
                if kind == "L":
                    out.append((key, m[0], m[1], m[2], m[3], m[4]))
                    del msgs[key]
            continue
        if proto == 6:
            key, payload = (point, src, dst, int(last(tsp)), int(last(tdp)), 6), int(last(tlen))
        else:
            key, payload = (point, src, dst, int(last(usp)), int(last(udp_)), 17), int(last(ulen)) - 8
        if payload == 0:
            control["no_payload"] += 1
            continue
        fl = flowlets.get(key)
        if fl and t - fl[1] > gap_ns:
            out.append((key, fl[0], fl[1], fl[2], fl[3], None))
            fl = None
        if fl is None:
            flowlets[key] = [t, t, payload, 1]
        else:
            fl[1], fl[2], fl[3] = t, fl[2] + payload, fl[3] + 1
    assert not msgs, f"unterminated messages in the reference: {msgs}"
    out += [(k, v[0], v[1], v[2], v[3], None) for k, v in flowlets.items()]
    return out, control

def ours(path):
    out = []
    for r in csv.DictReader(open(path)):
        point = r.get("switch", "")
        if r["qp"] != "0":
            key = (point, r["src"], r["dst"], int(r["qp"]))
        else:
            key = (point, r["src"], r["dst"], int(r["src_port"]), int(r["dst_port"]), int(r["proto"]))
        out.append((key, int(r["start_ns"]), int(r["end_ns"]), int(r["bytes"]), int(r["packets"]),
                    int(r["src_port"]) if r["qp"] != "0" else None))
    return out

def stats(path):
    s = {}
    for line in open(path):
        p = line.split()
        if len(p) == 3 and p[0] == "stat":
            s[p[1]] = int(p[2])
    return s

for name in ("roce", "erspan", "tcp"):
    ref, control = reference(f"{d}/{name}.tshark.tsv")
    got = ours(f"{d}/{name}.ours.csv")
    st = stats(f"{d}/{name}.ours.stats")
    assert sorted(ref) == sorted(got), f"{name}: records differ\n tshark: {sorted(ref)}\n ours:   {sorted(got)}"
    for kind, stat in (("ack", "roce_ack"), ("nak", "roce_nak"), ("cnp", "roce_cnp"),
                       ("read_request", "roce_read_request")):
        assert control[kind] == st.get(stat, 0), f"{name}: {stat} {st.get(stat, 0)} != tshark {control[kind]}"
    bad = {k: v for k, v in st.items() if k.startswith(("packet_", "roce_bad", "pcap_file", "roce_message"))}
    assert not bad, f"{name}: unexpected skips {bad}"
    print(f"ok {name}: {len(got)} records, {sum(r[3] for r in got)} bytes, control {dict(control)}: "
          f"equal to tshark's decode")
PY
