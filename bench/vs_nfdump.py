#!/usr/bin/env python3
"""llmprism analyze beside nfdump on the same records (docs/performance.md).

Simulates a scenario once (default scale-10k seed 5; or reuses --data DIR), sends its IPFIX
records into nfcapd on a free loopback port (`llmprism replay`, rate-limited so no datagram is
lost; the received flow count must equal the file's), then runs, in paired rounds,

  llmprism analyze DIR/flows.ipfix --topology DIR/topology.csv --report /dev/null --threads 1 --timings
  nfdump -r NFCAPD_FILE -A srcip,dstip > /dev/null

and prints the medians of wall and CPU (user + sys) seconds, minor page faults and peak RSS of
each, the ratios llmprism / nfdump (median of the per-round ratios: both members of a round see
about the same machine load), and llmprism's per-stage --timings table (medians). The order
within a round is reversed every other round (llmprism builds first, then nfdump; then nfdump
first, builds in reverse), and each run starts after a pause (--pause, 3 s): on the virtual
machines this was measured on, a run started at once after another ran up to 40% slower, and
which member of a pair came second decided the comparison (docs/performance.md). --bin may be
given more than once to compare builds in the same rounds (e.g. before / after a change); each is
compared with nfdump. --analyze-arg adds an argument to every analyze command (e.g. --timelines).

  bench/vs_nfdump.py [--bin build/apps/llmprism/llmprism ...] [--work /tmp/llmprism-vs-nfdump]
                     [--scenario scale-10k] [--seed 5] [--runs 3] [--threads 1] [--data DIR]
                     [--analyze-arg ARG ...] [--pause 3] [--keep]

Needs nfcapd and nfdump (Debian: nfdump). The nfcapd file and the simulated directory (a few
hundred MB at scale-10k) stay under --work for reuse unless --data is given; delete it when done.
"""
import argparse
import glob
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time


def load():
    return os.getloadavg()[0]


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def timed(cmd, stdout=subprocess.DEVNULL):
    """Runs cmd; returns dict(wall, cpu, minflt, maxrss_mb, err, rc) from the child's own rusage."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return dict(wall=wall, cpu=ru.ru_utime + ru.ru_stime, user=ru.ru_utime, sys=ru.ru_stime,
                minflt=ru.ru_minflt, maxrss_mb=ru.ru_maxrss / 1024, err=err, rc=p.returncode)


def nfdump_flows(path):
    """Flows in an nfcapd file, from nfdump's own statistics (-I)."""
    out = subprocess.run(["nfdump", "-r", path, "-I"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split(":", 1)
        if len(f) == 2 and f[0].strip() == "Flows":
            return int(f[1])
    sys.exit(f"nfdump -I {path}: no flow count in\n{out}")


def capture_nfcapd(bin_path, flows, records, out_dir, rate):
    """Replays `flows` into nfcapd; returns the path of one nfcapd file holding every record."""
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    port = free_udp_port()
    log = open(os.path.join(out_dir, "..", "nfcapd.log"), "w")
    # -t 3600: one file unless the replay crosses an hour boundary (then merged below).
    nf = subprocess.Popen(["nfcapd", "-b", "127.0.0.1", "-p", str(port), "-w", out_dir, "-t", "3600",
                           "-B", str(64 << 20)], stdout=log, stderr=subprocess.STDOUT)
    try:
        time.sleep(0.5)
        subprocess.run([bin_path, "replay", flows, "--to", f"127.0.0.1:{port}", "--rate", str(rate)],
                       check=True)
        time.sleep(1)
    finally:
        nf.send_signal(signal.SIGTERM)
        nf.wait(timeout=60)
    files = sorted(glob.glob(os.path.join(out_dir, "nfcapd.*")))
    if not files:
        sys.exit(f"nfcapd wrote no file into {out_dir} (see {out_dir}/../nfcapd.log)")
    path = files[0]
    if len(files) > 1:
        path = os.path.join(out_dir, "..", "merged.nfcapd")
        subprocess.run(["nfdump", "-R", out_dir, "-w", path], check=True, stdout=subprocess.DEVNULL)
    got = nfdump_flows(path)
    if got != records:
        return None, got
    return path, got


def parse_timings(err):
    stages, order = {}, []
    for line in err.splitlines():
        if not line.startswith("timings: ") or " stage " in line:
            continue
        f = line.split()
        stages[f[1]] = dict(items=int(f[2]), cpu=float(f[3]), wall=float(f[4]), rss=float(f[6]))
        order.append(f[1])
    return order, stages


def records_of(err):
    _, stages = parse_timings(err)
    return stages["total"]["items"]


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", default=[])
    ap.add_argument("--work", default="/tmp/llmprism-vs-nfdump")
    ap.add_argument("--scenario", default="scale-10k")
    ap.add_argument("--seed", default="5")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default="1")
    ap.add_argument("--data", help="a simulated directory to reuse (flows.ipfix, topology.csv)")
    ap.add_argument("--analyze-arg", action="append", default=[])
    ap.add_argument("--rate", type=float, default=1e6, help="replay records per second into nfcapd")
    ap.add_argument("--pause", type=float, default=3.0, help="seconds of rest before each timed run")
    args = ap.parse_args()
    bins = args.bin or ["build/apps/llmprism/llmprism"]
    for tool in ("nfcapd", "nfdump"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found (Debian package nfdump; scripts/setup.sh installs it)")
    os.makedirs(args.work, exist_ok=True)
    d = args.data or os.path.join(args.work, f"{args.scenario}-{args.seed}")
    flows = os.path.join(d, "flows.ipfix")
    if not os.path.exists(flows):
        print(f"simulating {args.scenario} seed {args.seed} into {d} ...", flush=True)
        subprocess.run([bins[0], "simulate", "--scenario", args.scenario, "--seed", args.seed,
                        "--out", d], check=True)

    def analyze_cmd(b):
        return [b, "analyze", flows, "--topology", os.path.join(d, "topology.csv"), "--report",
                "/dev/null", "--threads", args.threads, "--timings"] + args.analyze_arg

    first = timed(analyze_cmd(bins[0]))
    if first["rc"] not in (0, 1):
        sys.exit(f"analyze failed ({first['rc']}):\n{first['err']}")
    records = records_of(first["err"])

    nf_dir = os.path.join(d + ".nfcapd", "files")
    nf_file = None
    existing = sorted(glob.glob(os.path.join(nf_dir, "nfcapd.*")))
    if len(existing) == 1 and nfdump_flows(existing[0]) == records:
        nf_file = existing[0]
    rate = args.rate
    while nf_file is None:
        print(f"replaying {records} records into nfcapd at {rate:.0f} records/s ...", flush=True)
        nf_file, got = capture_nfcapd(bins[0], flows, records, nf_dir, rate)
        if nf_file is None:
            if rate < 1e5:
                sys.exit(f"nfcapd received {got} of {records} flows even at {rate:.0f} records/s")
            print(f"  nfcapd received {got} of {records} flows: again, slower", flush=True)
            rate /= 2
    nf_cmd = ["nfdump", "-r", nf_file, "-A", "srcip,dstip"]

    print(f"machine: {os.cpu_count()} cores, {os.uname().release}; {records} records; "
          f"nfcapd file {os.path.getsize(nf_file) / 1e6:.0f} MB")
    runs = {b: [] for b in bins}
    nf_runs = []
    for i in range(args.runs):
        la = load()
        order = [("llmprism", b) for b in bins] + [("nfdump", None)]
        if i % 2 == 1:
            order.reverse()
        for kind, b in order:
            time.sleep(args.pause)
            if kind == "nfdump":
                r = timed(nf_cmd)
                if r["rc"] != 0:
                    sys.exit(f"nfdump failed:\n{r['err']}")
                nf_runs.append(r)
            else:
                r = timed(analyze_cmd(b))
                if r["rc"] not in (0, 1):
                    sys.exit(f"analyze failed ({r['rc']}):\n{r['err']}")
                runs[b].append(r)
        print(f"round {i + 1}: load {la:.1f}; " + "; ".join(
f"{b}: {runs[b][-1]['wall']:.2f} s" for b in bins) + f"; nfdump {nf_runs[-1]['wall']:.2f} s",
            flush=True)

    def row(name, rs):
        return (f"| {name} | {med([r['wall'] for r in rs]):.2f} | {med([r['user'] for r in rs]):.2f} | "
                f"{med([r['sys'] for r in rs]):.2f} | {med([r['cpu'] for r in rs]):.2f} | "
                f"{med([r['minflt'] for r in rs]):,.0f} | {med([r['maxrss_mb'] for r in rs]):.0f} |")

    print(f"\n## {args.scenario} seed {args.seed}: {records:,} records, medians of {args.runs} paired "
          f"rounds, analyze --threads {args.threads} {' '.join(args.analyze_arg)}")
    print("| program | wall s | user s | sys s | CPU s | minor faults | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for b in bins:
        print(row(f"llmprism ({b})", runs[b]))
    print(row("nfdump -A srcip,dstip", nf_runs))
    print("\n| program | llmprism / nfdump, wall | llmprism / nfdump, CPU | M records / wall s |")
    print("|---|---:|---:|---:|")
    for b in bins:
        wr = med([a["wall"] / n["wall"] for a, n in zip(runs[b], nf_runs)])
        cr = med([a["cpu"] / n["cpu"] for a, n in zip(runs[b], nf_runs)])
        rate = records / med([r["wall"] for r in runs[b]]) / 1e6
        print(f"| {b} | {wr:.2f}× | {cr:.2f}× | {rate:.2f} |")

    for b in bins:
        parsed = [parse_timings(r["err"]) for r in runs[b]]
        order = parsed[0][0]
        heaps = sorted({line[len("memory: heap in "):] for r in runs[b]
                        for line in r["err"].splitlines() if line.startswith("memory: heap in ")})
        print(f"\n### --timings, {b} (medians of {args.runs}; heap in {' / '.join(heaps) or '?'})")
        print("| stage | CPU s | wall s | peak RSS MB |")
        print("|---|---:|---:|---:|")
        for name in order:
            if name.startswith("bocd_points"):
                continue
            print(f"| {name} | {med([p[1][name]['cpu'] for p in parsed]):.3f} | "
                  f"{med([p[1][name]['wall'] for p in parsed]):.3f} | "
                  f"{max(p[1][name]['rss'] for p in parsed):.0f} |")


if __name__ == "__main__":
    main()
