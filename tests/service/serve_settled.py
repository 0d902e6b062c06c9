#!/usr/bin/env python3
"""Waits until a running `llmprism serve` has analysed all it was given: the served state is final.

Settled: nothing in analysis, the count of windows analysed unchanged since the previous poll (and
at least --min-windows), and either
  - the tail is analysed: the latest window reaches past the newest record (/metrics
    llmprism_window_lag_seconds 0, which only the idle flush or shutdown gives: before it a window
    is due only once the records are --reorder past its end) after at least one window of this
    process, and a stream role has no message left to read (llmprism_stream_lag_messages 0); or
  - no window came and no record was taken for --quiet-s seconds (a record reaching past its
    window keeps the lag above 0). The span counts from the last record too: the idle flush
    counts from it, and an analyser still reading a backlog (a restarted one) takes records for
    seconds after its last window, so a span from the window alone ended before the idle flush.
The first is what the quiet span stood in for, known a quiet span sooner. Exits 1 after --timeout s.
Each poll is two HTTP requests from this one process (a curl and a python per poll cost more on
a loaded 2-core machine); the quiet span is clock time, not a count of polls.

Usage: serve_settled.py PORT --quiet-s S [--timeout 90] [--min-windows 0] [--token T]
"""
import argparse
import json
import sys
import time
import urllib.request


def poll(base, headers):
    """(windows analysed, records taken, analysing, tail analysed) of the server, or None when it
    did not answer."""
    def get(path):
        req = urllib.request.Request(base + path, headers=headers)
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.read().decode()
    try:
        health = json.loads(get("/api/v1/health"))
        metrics = dict(line.rsplit(" ", 1) for line in get("/metrics").splitlines()
                       if line and not line.startswith("#"))
    except (OSError, ValueError):
        return None
    n = health["windows_analysed"]
    tail = (n >= 1 and float(metrics.get("llmprism_window_lag_seconds", "1")) == 0
            and float(metrics.get("llmprism_stream_lag_messages", "0")) == 0)
    taken = sum(float(v) for k, v in metrics.items()
                if k.startswith("llmprism_records_ingested_total"))
    return n, taken, health["analysing"] is not None, tail


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port")
    ap.add_argument("--quiet-s", type=float, required=True)
    ap.add_argument("--timeout", type=float, default=90)
    ap.add_argument("--min-windows", type=int, default=0)
    ap.add_argument("--token")
    a = ap.parse_args()
    base = f"http://127.0.0.1:{a.port}"
    headers = {"Authorization": f"Bearer {a.token}"} if a.token else {}
    start = time.monotonic()
    deadline = start + a.timeout
    last, since, n = None, start, None
    while time.monotonic() < deadline:
        state = poll(base, headers)
        now = time.monotonic()
        if state is not None:
            n, taken, busy, tail = state
            if (n, taken) == last and not busy and n >= a.min_windows:
                if tail or now - since >= a.quiet_s:
                    how = "tail analysed" if tail else f"no window for {a.quiet_s:g} s"
                    print(f"settled port {a.port}: {n} windows, {how}, {now - start:.1f} s")
                    return 0
            else:
                last, since = (n, taken), now
        time.sleep(0.1)
    print(f"FAIL windows did not settle on port {a.port} (windows analysed: {n})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
