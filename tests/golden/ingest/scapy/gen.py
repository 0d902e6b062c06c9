#!/usr/bin/python3
"""Builds the scapy reference captures for tests/interop/scapy_tshark.sh (Debian python3-scapy;
run with /usr/bin/python3). Deterministic: fixed times, addresses and payload sizes.

roce.pcap    RoCEv2 on three QPs between two hosts plus one reverse QP: RDMA WRITE FIRST/MIDDLE/LAST,
             WRITE ONLY (RETH), SEND FIRST/LAST-with-immediate, READ request + READ response
             FIRST/LAST, ACK, NAK, CNP; messages of different QPs interleave.
erspan.pcap  the same RoCE packets mirrored through ERSPAN II (session 5; odd QPs) and ERSPAN III
             (session 9; even QPs) by two exporters, cut at a 128-byte snaplen as a switch mirror
             would.
tcp.pcap     TCP in both directions with pure ACKs and a 3 ms pause (two flowlets one way), plus a
             UDP stream, for the flowlet test and for softflowd.
Payload sizes are small (256-byte segments) to keep the files a few KB.
"""
import os
import sys

from scapy.all import IP, TCP, UDP, Ether, GRE, Raw, wrpcap, PcapWriter
from scapy.contrib.roce import BTH, AETH
from scapy.contrib.erspan import ERSPAN_II, ERSPAN_III

OUT = os.path.dirname(os.path.abspath(__file__)) if len(sys.argv) < 2 else sys.argv[1]
T0 = 1_700_000_000.0
A, B = "10.0.0.1", "10.0.1.1"
MAC = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def roce(src, dst, sport, qp, opcode, psn, payload=0, ext=b""):
    return (Ether(**MAC) / IP(src=src, dst=dst) / UDP(sport=sport, dport=4791) /
            BTH(opcode=opcode, dqpn=qp, psn=psn) / Raw(ext + b"\x00" * payload))


RETH = b"\x00" * 16
IMM = b"\x00" * 4


def aeth(syndrome):
    return bytes([syndrome]) + b"\x00\x00\x01"


def roce_packets():
    pk = []
    t = T0
    def add(p, dt=0.000001):
        nonlocal t
        t += dt
        p.time = t
        pk.append(p)
    # QP 0x11: WRITE FIRST, MIDDLE x2, LAST (4 x 256 B), interleaved with QP 0x22 WRITE ONLY and
    # QP 0x33 SEND FIRST / SEND LAST with immediate.
    add(roce(A, B, 50001, 0x11, 0x06, 1, 256, RETH))
    add(roce(A, B, 50002, 0x22, 0x0A, 1, 64, RETH))
    add(roce(A, B, 50001, 0x11, 0x07, 2, 256))
    add(roce(A, B, 50003, 0x33, 0x00, 1, 256))
    add(roce(A, B, 50001, 0x11, 0x07, 3, 256))
    add(roce(A, B, 50003, 0x33, 0x03, 2, 100, IMM))
    add(roce(A, B, 50001, 0x11, 0x08, 4, 200))
    add(roce(B, A, 50004, 0x44, 0x11, 4, 0, aeth(0x00)))  # ACK
    add(roce(B, A, 50004, 0x44, 0x11, 5, 0, aeth(0x60)))  # NAK (PSN sequence error)
    add(roce(B, A, 50004, 0x44, 0x81, 0, 16))             # CNP (16 reserved bytes)
    # READ: request on QP 0x55 (A -> B), response FIRST/LAST back to A's QP 0x66.
    add(roce(A, B, 50005, 0x55, 0x0C, 1, 0, RETH))
    add(roce(B, A, 50006, 0x66, 0x0D, 1, 256, aeth(0)))
    add(roce(B, A, 50006, 0x66, 0x0F, 2, 50, aeth(0)))
    # A second message on QP 0x11 after 2 ms: WRITE ONLY.
    add(roce(A, B, 50001, 0x11, 0x0A, 5, 128, RETH), 0.002)
    return pk


def mirror(pkts):
    out = []
    for i, p in enumerate(pkts):
        if p[BTH].dqpn % 2:  # per QP, so a message is seen whole at one point
            outer = (Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") /
                     IP(src="192.168.0.1", dst="192.168.0.100") / GRE(seqnum_present=1, seqence_number=i) /
                     ERSPAN_II(ver=1, session_id=5) / p)
        else:
            outer = (Ether(src="02:00:00:00:00:0c", dst="02:00:00:00:00:0b") /
                     IP(src="192.168.0.2", dst="192.168.0.100") / GRE(seqnum_present=1, seqence_number=i) /
                     ERSPAN_III(ver=2, session_id=9) / p)
        outer.time = p.time
        out.append(outer)
    return out


def tcp_packets():
    pk = []
    t = T0 + 1
    C, D = "10.0.2.1", "10.0.3.1"
    def add(p, dt):
        nonlocal t
        t += dt
        p.time = t
        pk.append(p)
    E = Ether(**MAC)
    add(E / IP(src=C, dst=D) / TCP(sport=40000, dport=5201, flags="S"), 0)
    add(E / IP(src=D, dst=C) / TCP(sport=5201, dport=40000, flags="SA"), 0.00001)
    add(E / IP(src=C, dst=D) / TCP(sport=40000, dport=5201, flags="A"), 0.00001)
    for i in range(6):
        add(E / IP(src=C, dst=D) / TCP(sport=40000, dport=5201, flags="PA") / Raw(b"x" * 1000), 0.00005)
        add(E / IP(src=D, dst=C) / TCP(sport=5201, dport=40000, flags="A"), 0.00001)
    add(E / IP(src=D, dst=C) / TCP(sport=5201, dport=40000, flags="PA") / Raw(b"y" * 300), 0.0001)
    for i in range(4):  # after a 3 ms pause: a second flowlet
        add(E / IP(src=C, dst=D) / TCP(sport=40000, dport=5201, flags="PA") / Raw(b"z" * 700),
            0.003 if i == 0 else 0.00005)
    for i in range(5):
        add(E / IP(src=C, dst=D) / UDP(sport=7000, dport=7001) / Raw(b"u" * 400), 0.0001)
    add(E / IP(src=C, dst=D) / TCP(sport=40000, dport=5201, flags="FA"), 0.0001)
    return pk


def write(name, pkts, snaplen=65535):
    w = PcapWriter(os.path.join(OUT, name), linktype=1, snaplen=snaplen, sync=True)
    w.write_header(None)
    for p in pkts:
        raw = bytes(p)
        # Cut to the snaplen while keeping the original length, as a switch mirror does.
        w.write_packet(raw[:snaplen], sec=int(p.time), usec=int(round((p.time % 1) * 1e6)),
                       caplen=min(len(raw), snaplen), wirelen=len(raw))
    w.close()


if __name__ == "__main__":
    r = roce_packets()
    write("roce.pcap", r)
    write("erspan.pcap", mirror(r), snaplen=128)
    write("tcp.pcap", tcp_packets())
