#!/usr/bin/python3
"""Replays a pcap's Ethernet frames onto an interface in real time (the test peer that turns
`llmprism simulate --emit pcap` into traffic a live exporter such as softflowd can meter).

The destination MAC is rewritten to 02:00:00:00:00:01. Frames cut at the capture's snaplen are sent at their original length (the missing bytes are
zeros), so an exporter counting wire bytes sees the simulated sizes. Packet i leaves at
start + (ts_i - ts_0) / speed. Needs CAP_NET_RAW (AF_PACKET). Prints one JSON line of figures.

Usage: pcap_to_wire.py PCAP IFACE [--speed 1.0] [--max-seconds 120]
"""
import argparse
import json
import socket
import struct
import sys
import time


OTHER_HOST_MAC = bytes([0x02, 0, 0, 0, 0, 0x01])


def read_pcap(path):
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            sys.exit(f"{path}: not a pcap file (shorter than its 24-byte header)")
        magic = struct.unpack("<I", head[:4])[0]
        if magic == 0xA1B2C3D4:
            endian, frac = "<", 1e-6
        elif magic == 0xA1B23C4D:
            endian, frac = "<", 1e-9
        elif magic == 0xD4C3B2A1:
            endian, frac = ">", 1e-6
        elif magic == 0x4D3CB2A1:
            endian, frac = ">", 1e-9
        else:
            sys.exit(f"{path}: not a pcap file (magic {magic:#010x}); pcapng is not supported")
        linktype = struct.unpack(endian + "I", head[20:24])[0]
        if linktype != 1:
            sys.exit(f"{path}: link type {linktype}, only Ethernet (1) can be replayed")
        rec = struct.Struct(endian + "IIII")
        while True:
            h = f.read(16)
            if not h:
                return
            if len(h) < 16:
                sys.exit(f"{path}: truncated record header at offset {f.tell() - len(h)}")
            sec, sub, caplen, wirelen = rec.unpack(h)
            data = f.read(caplen)
            if len(data) < caplen:
                sys.exit(f"{path}: truncated frame at offset {f.tell() - len(data)}")
            yield sec + sub * frac, data, wirelen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pcap")
    ap.add_argument("iface")
    ap.add_argument("--speed", type=float, default=1.0)
    ap.add_argument("--max-seconds", type=float, default=120.0,
                    help="refuse captures longer than this (at --speed)")
    a = ap.parse_args()
    if a.speed <= 0:
        sys.exit("--speed must be positive")
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    first_ts = None
    start = time.monotonic()
    sent = bytes_sent = 0
    max_late = 0.0
    zeros = bytes(65536)
    for ts, data, wirelen in read_pcap(a.pcap):
        if first_ts is None:
            first_ts = ts
        offset = (ts - first_ts) / a.speed
        if offset > a.max_seconds:
            sys.exit(f"{a.pcap}: lasts longer than --max-seconds {a.max_seconds}")
        delay = start + offset - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            max_late = max(max_late, -delay)
        frame = data + zeros[:wirelen - len(data)] if wirelen > len(data) else data
        # A unicast destination MAC that is not the interface's: the receiving kernel marks the
        # frame PACKET_OTHERHOST and drops it before IP (no routing or forwarding of the
        # simulated addresses); packet taps (the exporter) still see it.
        frame = OTHER_HOST_MAC + frame[6:]
        s.send(frame)
        sent += 1
        bytes_sent += len(frame)
    print(json.dumps({"packets": sent, "bytes": bytes_sent,
                      "seconds": round(time.monotonic() - start, 3),
                      "max_late_s": round(max_late, 4)}))


if __name__ == "__main__":
    main()
