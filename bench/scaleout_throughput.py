#!/usr/bin/env python3
"""Throughput of sharded analysers on NATS JetStream (docs/scale-out.md, Throughput).

Simulates a scenario whose jobs the recogniser puts on two shards, publishes its records into a
nats-server's stream once (a routing collector and `llmprism recognise --shards 2`), then, in
paired rounds, reads the stream with
  (a) one analyser taking both shards' subjects ('records.shard.>'), and
  (b) two analysers, one shard each ('records.shard.N.>'),
every analyser in a cgroup of its own held to the same CPU quota (--cpu, e.g. 0.4 CPU). Each
analyser's /metrics are polled: records ingested, llmprism_stream_lag_messages, windows analysed.
A run's figures, from the first record read:
  read     the stream drained: every record read and every analyser's lag 0;
  analysed the last window the data makes due (no idle flush) analysed.
Records/s = records on the shard subjects / seconds. Medians over the rounds and the ratio
(b)/(a) are printed, with the 1-minute load average of every run.

Then recovery runs: two analysers, the nats-server killed with kill -9 once a third of the
records are read, restarted on its store after --outage seconds; printed: the time from the
restart until every analyser's lag is 0 again, the analysers' reconnects and redeliveries, or
that an analyser died (--gdb: analysers run under gdb, a backtrace in their log).

  bench/scaleout_throughput.py [--bin build/apps/llmprism/llmprism] [--work /tmp/llmprism-scaleout]
      [--scenario scale-10k] [--duration 32.5] [--cpu 0.4] [--rounds 3] [--recoveries 3]
      [--window 20] [--step 5] [--recovery-only] [--gdb] [--valgrind] [--fetch-batches N]

Needs root and a writable cpu cgroup (v1 /sys/fs/cgroup/cpu, or v2 with cpu.max); without one
it says so and exits 0. Public tools only: nats-server and the Python standard library.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

CG_V1 = "/sys/fs/cgroup/cpu"
CHILDREN = []  # every process started: killed when the bench ends, however it ends
CGROUPS = []
CG_V2 = "/sys/fs/cgroup"


def load():
    return os.getloadavg()[0]


def spawn(cmd, **kw):
    p = subprocess.Popen(cmd, **kw)
    CHILDREN.append(p)
    return p


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


# ---------------------------------------------------------------------------------------------
# CPU cgroups: one per analyser, the same quota each.

def cgroup_root():
    """The directory new cpu cgroups go in, and the version; None when none is writable."""
    if os.path.exists(os.path.join(CG_V2, "cgroup.controllers")):
        try:
            with open(os.path.join(CG_V2, "cgroup.subtree_control"), "w") as f:
                f.write("+cpu")
            return CG_V2, 2
        except OSError:
            return None
    if os.access(os.path.join(CG_V1, "cpu.cfs_quota_us"), os.W_OK):
        return CG_V1, 1
    return None


class CpuCgroup:
    def __init__(self, root, version, name, cpus):
        self.path = os.path.join(root, name)
        self.version = version
        os.makedirs(self.path, exist_ok=True)
        CGROUPS.append(self)
        period = 100000
        if version == 1:
            self._write("cpu.cfs_period_us", period)
            self._write("cpu.cfs_quota_us", int(cpus * period))
        else:
            self._write("cpu.max", f"{int(cpus * period)} {period}")

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def attach_self(self):
        """preexec_fn: the child joins the cgroup before it runs llmprism."""
        self._write("cgroup.procs", os.getpid())

    def throttled_s(self):
        stat = dict(line.split() for line in open(os.path.join(self.path, "cpu.stat")))
        if self.version == 1:
            return int(stat.get("throttled_time", 0)) / 1e9
        return int(stat.get("throttled_usec", 0)) / 1e6

    def remove(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def process_cpu_s(pid):
    """User + system CPU seconds of a live process (/proc/PID/stat)."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------
# The processes: nats-server, recogniser, collector, analysers.

class Nats:
    def __init__(self, work):
        self.work = work
        self.port, self.mon = free_port(), free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.proc = None

    def start(self):
        exe = shutil.which("nats-server") or "/usr/sbin/nats-server"
        log = open(os.path.join(self.work, "nats.log"), "a")
        self.proc = spawn([exe, "-js", "-a", "127.0.0.1", "-p", str(self.port), "-m",
                                      str(self.mon), "-sd", os.path.join(self.work, "store")],
                                     stdout=log, stderr=log)
        wait_for(lambda: http_get(f"http://127.0.0.1:{self.mon}/healthz") is not None, 10,
                 "nats-server healthy")

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def purge_records(self):
        """Empties LLMPRISM_RECORDS (the key-value bucket and the pair stream stay): a JetStream
        API request in the NATS text protocol, so the bench needs no client library."""
        import json
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as c:
            f = c.makefile("rb")
            f.readline()  # INFO
            c.sendall(b'CONNECT {"verbose":false}\r\nSUB _INBOX.bench 1\r\n'
                      b"PUB $JS.API.STREAM.PURGE.LLMPRISM_RECORDS _INBOX.bench 0\r\n\r\nPING\r\n")
            while True:
                line = f.readline().decode()
                if line.startswith("MSG"):
                    reply = json.loads(f.read(int(line.split()[-1])))
                    break
                if line.startswith("-ERR") or not line:
                    sys.exit(f"purging the stream: {line.strip()}")
        if not reply.get("success"):
            sys.exit(f"purging the stream: {reply}")
        return reply["purged"]

    def stream_messages(self):
        """Messages in LLMPRISM_RECORDS, from the monitoring port."""
        import json
        jsz = json.loads(http_get(f"http://127.0.0.1:{self.mon}/jsz?streams=true"))
        for acc in jsz.get("account_details", []):
            for s in acc.get("stream_detail", []):
                if s["name"] == "LLMPRISM_RECORDS":
                    return s["state"]["messages"]
        return 0


def wait_for(pred, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if pred():
                return
        except Exception:
            pass
        time.sleep(0.1)
    sys.exit(f"timed out waiting for {what}")


class Serve:
    """`llmprism serve ARGS` with a ready file; its /metrics parsed on demand."""

    def __init__(self, args, work, name, serve_args, cgroup=None):
        self.name = name
        self.log_path = os.path.join(work, f"{name}.log")
        ready = os.path.join(work, f"{name}.ready.json")
        if os.path.exists(ready):
            os.remove(ready)
        log = open(self.log_path, "w")
        wrap = []
        if cgroup and args.gdb:
            wrap = ["gdb", "-q", "-batch", "-ex", "run", "-ex", "thread apply all bt", "--args"]
        elif cgroup and args.valgrind:
            wrap = ["valgrind", "-q", f"--log-file={self.log_path}.valgrind", "--error-limit=no"]
        self.proc = spawn(
            [*wrap, args.bin, "serve", *serve_args, "--http", "127.0.0.1:0", "--ready-file", ready],
            stdout=log, stderr=log,
            preexec_fn=cgroup.attach_self if cgroup else None)
        self.cgroup = cgroup
        wait_for(lambda: os.path.getsize(ready) > 0, 30, f"{name} ready")
        import json
        self.port = json.load(open(ready))["http"]

    def metrics(self):
        out = {}
        for line in http_get(f"http://127.0.0.1:{self.port}/metrics").splitlines():
            if line.startswith("#") or not line:
                continue
            key, value = line.rsplit(" ", 1)
            name = re.sub(r"\{.*\}", "", key)
            out[name] = out.get(name, 0) + float(value)
        return out

    def analysing(self):
        import json
        h = json.loads(http_get(f"http://127.0.0.1:{self.port}/api/v1/health"))
        return h.get("analysing") is not None

    def ingest(self):
        import json
        return json.loads(http_get(f"http://127.0.0.1:{self.port}/api/v1/ingest"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def simulate(args):
    d = os.path.join(args.work, f"sim-{args.scenario}-{args.duration:g}")
    flows = os.path.join(d, "flows.ipfix")
    if not os.path.exists(flows):
        os.makedirs(d, exist_ok=True)
        cmd = [args.bin, "simulate", "--scenario", args.scenario, "--seed", "1", "--out", d]
        if args.duration:
            cmd += ["--duration", str(args.duration)]
        print(f"simulating: {' '.join(cmd)}", flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return d


def publish(args, nats, sim):
    """The scenario's records into the stream, once, as a routing collector publishes them once
    the recogniser's map covers every job: the file goes through once to build the map (its
    records through the recogniser), the stream is emptied, and the file goes through again,
    routed by the collector in the order it reads them. (Records forwarded by the recogniser reach
    a shard's subject after later records routed directly; read as a backlog, they would be
    late for their windows: docs/scale-out.md, Moves and ordering.) Returns the records on the
    shard subjects."""
    win = ["--window", str(args.window), "--step", str(args.step)]
    topo = os.path.join(sim, "topology.csv")
    rec_log = os.path.join(args.work, "recogniser.log")
    rec = spawn([args.bin, "recognise", "--nats", nats.url, "--shards", "2",
                 "--topology", topo, *win], stderr=open(rec_log, "w"))
    watch = os.path.join(args.work, "watch")
    os.makedirs(watch, exist_ok=True)
    col = Serve(args, args.work, "collector",
                ["--role", "collector", "--nats", nats.url, "--nats-subject", "records.c1",
                 "--route-by-job", "--watch", watch, *win])

    def stream():
        return col.ingest()["stream"]

    def forwarded():
        m = re.findall(r"forwarded (\d+) records so far", open(rec_log).read())
        return int(m[-1]) if m else 0

    def all_in(name):
        s = stream()
        ingested = col.metrics().get("llmprism_records_ingested_total", 0)
        return (s["published_records"] == ingested and not os.path.exists(os.path.join(watch, name)) and s["held_records"] == 0 and
                s["published_records"] > 0 and forwarded() >= s["unrouted_records"])

    drop(sim, watch, "first.ipfix")
    wait_for(lambda: all_in("first.ipfix"), 600, "the first pass to be published and forwarded")
    first = stream()
    purged = nats.purge_records()
    print(f"first pass: {first['published_records']:,} records, {first['unrouted_records']:,} "
          f"through the recogniser; map of {first['shard_map_gpus']:,} GPUs; stream emptied "
          f"({purged:,} messages)", flush=True)
    t0 = time.time()
    drop(sim, watch, "second.ipfix")
    wait_for(lambda: all_in("second.ipfix") and
             stream()["published_records"] >= 2 * first["published_records"], 600,
             "the second pass to be published")
    s = stream()
    total = s["published_records"] - first["published_records"]
    unrouted = s["unrouted_records"] - first["unrouted_records"]
    print(f"published {total:,} records in {time.time() - t0:.1f} s, {unrouted:,} of them "
          f"unrouted; stream holds {nats.stream_messages():,} messages", flush=True)
    if unrouted:
        sys.exit("the map did not cover every record: the shards' order would not be the file's")
    col.stop()
    rec.send_signal(signal.SIGTERM)
    rec.wait(30)
    return total


def drop(sim, watch, name):
    """The scenario's flow file appears whole in the collector's watched directory."""
    shutil.copy(os.path.join(sim, "flows.ipfix"), os.path.join(watch, "." + name))
    os.rename(os.path.join(watch, "." + name), os.path.join(watch, name))


# ---------------------------------------------------------------------------------------------
# One run: analysers from an empty database to the stream drained and the due windows analysed.

def fetch_batches_args(args):
    """The analysers' --nats-fetch-batches, when given (else the binary's default)."""
    return ["--nats-fetch-batches", str(args.fetch_batches)] if args.fetch_batches else []


def start_analysers(args, nats, sim, cg, subjects, tag):
    analysers = []
    for i, subject in enumerate(subjects):
        group = CpuCgroup(cg[0], cg[1], f"llmprism-bench-{tag}-{i}", args.cpu)
        db = os.path.join(args.work, f"{tag}-{i}.sqlite")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
        analysers.append(Serve(args, args.work, f"{tag}-{i}", [
            "--role", "analyser", "--nats", nats.url, "--nats-subject", subject, "--db", db,
            "--window", str(args.window), "--step", str(args.step), "--idle-flush", "100000",
            "--queue-records", str(args.queue_records), *fetch_batches_args(args),
            "--topology", os.path.join(sim, "topology.csv")], group))
    return analysers


class AnalyserDied(Exception):
    pass


def poll(analysers):
    """Per analyser: (records ingested, lag messages, windows analysed, analysing now)."""
    out = []
    for a in analysers:
        if a.proc.poll() is not None:
            raise AnalyserDied(f"{a.name} exited with code {a.proc.returncode} (log: {a.log_path})")
        m = a.metrics()
        out.append((m.get("llmprism_records_ingested_total", 0),
                     m.get("llmprism_stream_lag_messages", -1),
                     m.get("llmprism_windows_analysed_total", 0), m))
    return out


def measure(args, analysers, total, expect_windows=None, on_progress=None):
    """Polls until every record is read and every lag is 0, and then until every analyser has
    analysed `expect_windows` windows (when not known: until no window came and none was in
    analysis for --settle s). Returns the times of the first record read, the stream drained and
    the last window analysed, and the last poll."""
    first = drained = None
    last_windows, last_change = -1, time.time()
    while True:
        now = time.time()
        p = poll(analysers)
        records = sum(x[0] for x in p)
        windows = sum(x[2] for x in p)
        if first is None and records > 0:
            first = now
        if on_progress:
            on_progress(records, p)
        if drained is None and records >= total and all(x[1] == 0 for x in p):
            drained = now
        if expect_windows is not None:
            if drained and all(x[2] >= expect_windows for x in p):
                return first, drained, now, p
        else:
            if windows != last_windows or any(a.analysing() for a in analysers):
                last_windows, last_change = windows, now
            if drained and now - last_change > args.settle:
                return first, drained, last_change, p
        if first and now - first > args.timeout:
            sys.exit(f"run did not finish in {args.timeout} s: records {records} of {total}, "
                     f"lags {[x[1] for x in p]}, windows {[x[2] for x in p]}")
        time.sleep(0.05)


def run(args, nats, sim, cg, mode, total, tag, expect_windows):
    subjects = ["records.shard.>"] if mode == 1 else ["records.shard.0.>", "records.shard.1.>"]
    la = load()
    analysers = start_analysers(args, nats, sim, cg, subjects, tag)
    try:
        first, drained, analysed, p = measure(args, analysers, total, expect_windows)
        windows = [int(x[2]) for x in p]
        lost = sum(x[3].get("llmprism_records_lost_total", 0) +
                   x[3].get("llmprism_records_dropped_total", 0) for x in p)
        cpu = sum(process_cpu_s(a.proc.pid) for a in analysers)
        throttled = sum(a.cgroup.throttled_s() for a in analysers)
        per = [int(x[0]) for x in p]
    finally:
        for a in analysers:
            a.stop()
            a.cgroup.remove()
    # First record seen at most one poll (50 ms) late: half a poll added.
    r = dict(mode=mode, read_s=drained - first + 0.025, analysed_s=analysed - first + 0.025, cpu=cpu,
             windows=windows, per=per, load=la, throttled=throttled, lost=lost)
    print(f"  {mode} analyser{'s' if mode > 1 else ' '}: read {total / r['read_s']:>9,.0f} rec/s "
          f"({r['read_s']:.2f} s), analysed {total / r['analysed_s']:>9,.0f} rec/s "
          f"({r['analysed_s']:.2f} s), windows by analyser {windows}, records by analyser {per}, "
          f"CPU {cpu:.1f} s, throttled {throttled:.1f} s, lost {lost:.0f}, load {la:.2f}", flush=True)
    return r


def recovery_run(args, nats, sim, cg, total, expect_windows, n):
    """Two analysers; the nats-server killed with kill -9 once a third of the records are read,
    restarted on its store after --outage s: seconds from the restart until every lag is 0.
    Returns whether both analysers lived through it."""
    analysers = start_analysers(args, nats, sim, cg, ["records.shard.0.>", "records.shard.1.>"],
                                f"recovery{n}")
    state = {}

    def on_progress(records, p):
        if "restarted" in state and "resumed" not in state and records > state["at"]:
            state["resumed"] = time.time()
        if "killed" not in state and records >= total / 3:
            nats.kill9()
            state["killed"] = time.time()
            state["at"] = records
            time.sleep(args.outage)
            nats.start()
            state["restarted"] = time.time()

    try:
        first, drained, analysed, p = measure(args, analysers, total, expect_windows, on_progress)
    except AnalyserDied as e:
        print(f"recovery {n}: an analyser died after the nats-server was killed: {e}", flush=True)
        return False
    finally:
        for a in analysers:
            a.stop()
            a.cgroup.remove()
    m = [x[3] for x in p]
    reconnects = sum(x.get("llmprism_stream_reconnects_total", 0) for x in m)
    redelivered = sum(x.get("llmprism_stream_redelivered_messages_total", 0) for x in m)
    print(f"recovery {n}: nats-server killed (kill -9) at {state['at']:,.0f} of {total:,} records "
          f"read, restarted {args.outage:.0f} s later; reading again "
          f"{state['resumed'] - state['restarted']:.2f} s and every lag 0 "
          f"{drained - state['restarted']:.2f} s after the restart; records by analyser "
          f"{[int(x[0]) for x in p]} (all {total:,}: "
          f"{'yes' if sum(x[0] for x in p) == total else 'NO'}); reconnects {reconnects:.0f}, "
          f"redelivered messages {redelivered:.0f}; lags at the end {[int(x[1]) for x in p]}",
          flush=True)
    return True


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM"))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", default="build/apps/llmprism/llmprism")
    ap.add_argument("--work", default="/tmp/llmprism-scaleout")
    # Ten equal jobs: the recogniser's assignment (by GPUs) gives each shard half the records.
    ap.add_argument("--scenario", default="scale-10k")
    # 32.5 s: the data's last records end 2.5 s past the last window every shard makes due (the
    # window ending at 25 s is due at 30 s with the 5-s reorder allowance), so both shards and the
    # one analyser analyse the same windows.
    ap.add_argument("--duration", type=float, default=32.5,
                    help="override the scenario's duration (s); 0: the scenario's own")
    ap.add_argument("--cpu", type=float, default=0.4, help="CPU quota of each analyser")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=float, default=20)
    ap.add_argument("--step", type=float, default=5)
    ap.add_argument("--queue-records", type=int, default=1_000_000,
                    help="each analyser's --queue-records")
    ap.add_argument("--settle", type=float, default=10,
                    help="first run: s without a new window and no analysis: done")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--fetch-batches", type=int, default=0,
                    help="the analysers' --nats-fetch-batches (record batches per fetch); 0: "
                         "their default")
    ap.add_argument("--outage", type=float, default=2, help="s the nats-server stays down")
    ap.add_argument("--recoveries", type=int, default=3,
                    help="recovery runs (nats-server killed mid-run); 0: none")
    ap.add_argument("--recovery-only", action="store_true", help="no rounds, only the recovery run")
    ap.add_argument("--gdb", action="store_true",
                    help="analysers under gdb: a backtrace in their log if one crashes")
    ap.add_argument("--valgrind", action="store_true",
                    help="recovery runs' analysers under valgrind (NAME.log.valgrind), each run "
                         "ending once the stream is drained")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    if args.fetch_batches < 0:
        ap.error(f"--fetch-batches {args.fetch_batches}: expected 1 or more (0: the default)")
    cg = cgroup_root()
    if cg is None:
        print("no writable cpu cgroup (needs root and /sys/fs/cgroup/cpu or cgroup v2 cpu.max): "
              "nothing measured")
        return 0
    shutil.rmtree(os.path.join(args.work, "store"), ignore_errors=True)
    shutil.rmtree(os.path.join(args.work, "watch"), ignore_errors=True)
    os.makedirs(args.work, exist_ok=True)
    sim = simulate(args)
    nats = Nats(args.work)
    nats.start()
    try:
        total = publish(args, nats, sim)
        print(f"cgroup v{cg[1]}, {args.cpu} CPU per analyser, {os.cpu_count()} CPUs, "
              f"window {args.window} s step {args.step} s, record batches per fetch "
              f"{args.fetch_batches or 'default'}", flush=True)
        results = {1: [], 2: []}
        expect_windows = None  # the windows the data makes due: learnt from the first run
        for i in range(0 if args.recovery_only else args.rounds):
            print(f"round {i + 1} (load {load():.2f})", flush=True)
            for mode in ((1, 2) if i % 2 == 0 else (2, 1)):
                r = run(args, nats, sim, cg, mode, total, f"r{i}-{mode}", expect_windows)
                expect_windows = expect_windows or r["windows"][0]
                results[mode].append(r)
        if results[1]:
            report(results, total)
        if args.valgrind:
            expect_windows = 0  # memcheck is too slow to wait for the windows
        lived = [recovery_run(args, nats, sim, cg, total, expect_windows, n + 1)
                 for n in range(args.recoveries)]
        if lived:
            print(f"recovery runs: analysers lived through {sum(lived)} of {len(lived)}")
    finally:
        for p in CHILDREN:
            if p.poll() is None:
                p.kill()
                p.wait()
        for g in CGROUPS:
            g.remove()
    return 0


def report(results, total):
    med = {m: {k: statistics.median(r[k] for r in rs) for k in ("read_s", "analysed_s", "cpu")}
           for m, rs in results.items()}
    for m in (1, 2):
        print(f"median, {m} analyser{'s' if m > 1 else ' '}: read {total / med[m]['read_s']:,.0f} "
              f"rec/s, analysed {total / med[m]['analysed_s']:,.0f} rec/s, CPU {med[m]['cpu']:.1f} s")
    ratios = [a["analysed_s"] / b["analysed_s"] for a, b in zip(results[1], results[2])]
    read_ratios = [a["read_s"] / b["read_s"] for a, b in zip(results[1], results[2])]
    print(f"scaling (2 vs 1 analyser, same CPU share each): analysed "
          f"{med[1]['analysed_s'] / med[2]['analysed_s']:.2f}x (paired rounds "
          f"{', '.join(f'{x:.2f}' for x in ratios)}), read {med[1]['read_s'] / med[2]['read_s']:.2f}x "
          f"(paired {', '.join(f'{x:.2f}' for x in read_ratios)})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
