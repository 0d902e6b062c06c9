#!/usr/bin/env bash
# CTest scaleout_fetch_strays: a fetch of record batches while messages of earlier pull requests
# are still arriving (tests/scaleout/fetch_strays_driver.cc), against a real nats-server on
# 127.0.0.1. With libnats before 3.9.0 a batch fetch then wrote past its array (the heap
# corruption of docs/scale-out.md, A node restart); PullConsumer::Fetch must return no more than
# it asked for, every message once and in order. Bounded: the driver's waits are at most 10 s.
set -euo pipefail
driver=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
. "$(dirname "$0")/nats_server.sh"
trap nats_stop EXIT
nats_start "$work"
"$driver" "$NATS_URL"
echo PASS
