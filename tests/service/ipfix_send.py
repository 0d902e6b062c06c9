"""Hand-built IPFIX datagrams for the service tests (clock_jumps.sh): one template (source and
destination IPv4, flowStart/EndMilliseconds, octetDeltaCount) and its data records per message,
with the export time and the record times chosen by the test, however implausible."""
import socket
import struct

TEMPLATE_ID = 256
FIELDS = [(8, 4), (12, 4), (152, 8), (153, 8), (1, 8)]  # (IE, length)


def message(records, export_s, seq=0, domain=1):
    """records: [(src '10.0.0.1', dst, start_ms, end_ms, bytes)]"""
    tmpl = struct.pack("!HH", TEMPLATE_ID, len(FIELDS))
    for ie, ln in FIELDS:
        tmpl += struct.pack("!HH", ie, ln)
    tset = struct.pack("!HH", 2, 4 + len(tmpl)) + tmpl
    body = b""
    for src, dst, start_ms, end_ms, nbytes in records:
        body += socket.inet_aton(src) + socket.inet_aton(dst)
        body += struct.pack("!QQQ", start_ms, end_ms, nbytes)
    dset = struct.pack("!HH", TEMPLATE_ID, 4 + len(body)) + body
    length = 16 + len(tset) + len(dset)
    return struct.pack("!HHIII", 10, length, export_s & 0xFFFFFFFF, seq, domain) + tset + dset


class Sender:
    def __init__(self, port, host="127.0.0.1"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.to = (host, port)
        self.seq = 0
        self.records = 0

    def send(self, records, export_s=None):
        if export_s is None:
            export_s = max(r[3] for r in records) // 1000
        self.sock.sendto(message(records, export_s, self.seq), self.to)
        self.seq += len(records)
        self.records += len(records)


def stream(sender, t0_s, t1_s, net=0, speed=20.0, base_ms=1_700_000_000_000, per_tick=10):
    """Steady traffic from event time t0_s to t1_s (s after base_ms), 0.1 s ticks, between hosts
    10.0.<2 net>.x and 10.0.<2 net + 1>.y, paced at `speed` x real time."""
    import time
    start = time.monotonic()
    k0 = int(t0_s * 10)
    for k in range(k0, int(t1_s * 10)):
        t_ms = base_ms + k * 100
        sender.send([(f"10.0.{2 * net}.{1 + i % 8}", f"10.0.{2 * net + 1}.{1 + (i * 3) % 8}",
                      t_ms, t_ms + 50, 4096) for i in range(per_tick)])
        delay = (k - k0 + 1) / 10 / speed - (time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("port", type=int)
    p.add_argument("--from-s", type=float, required=True)
    p.add_argument("--to-s", type=float, required=True)
    p.add_argument("--net", type=int, default=0, help="host group: new groups are new jobs")
    p.add_argument("--speed", type=float, default=20.0)
    a = p.parse_args()
    s = Sender(a.port)
    stream(s, a.from_s, a.to_s, a.net, a.speed)
    print(f"sent {s.records} records")
