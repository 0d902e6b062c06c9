#!/usr/bin/env bash
# `llmprism serve --sflow-udp` end to end: the simulator's sFlow export of a small RoCE scenario
# (simulate --emit sflow --sampling 10, with counter samples polled every 0.1 s) is sent datagram by
# datagram to serve's sFlow collector on a free loopback port; /api/v1/ingest must show the source
# "sflow:127.0.0.1:PORT" (kind sflow-udp) with every datagram, flow sample and counter sample decoded, records carrying them, nothing bad or lost, and
# /metrics its datagram count; SIGTERM must stop serve cleanly (exit 0).
# Usage: serve_sflow.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1 work=$2
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

"$bin" simulate --scenario pcap-tiny --duration 0.3 --emit sflow --sampling 10 --poll 0.1 \
  --refresh 0 --out "$work/sim" > /dev/null
"$bin" serve --sflow-udp 127.0.0.1:0 --http 127.0.0.1:0 --window 10 --step 5 --idle-flush 2 \
  --ready-file "$work/ready.json" 2>"$work/serve.log" &
SERVE_PID=$!
pids+=("$SERVE_PID")
for _ in $(seq 100); do
  [ -f "$work/ready.json" ] && break
  kill -0 "$SERVE_PID" 2>/dev/null || break
  sleep 0.1
done
[ -f "$work/ready.json" ] || { cat "$work/serve.log"; echo "FAIL serve did not start"; exit 1; }
HTTP=$($py -c "import json;print(json.load(open('$work/ready.json'))['http'])")
UDP=$($py -c "import json;print(json.load(open('$work/ready.json'))['udp'][0])")

# Send every datagram of the capture (its UDP payload), counting datagrams, flow samples (sample
# type 1 or 3) and counter samples (2 or 4).
$py - "$work/sim/sflow.pcap" "$UDP" >"$work/sent.json" <<'PY'
import json, socket, struct, sys, time
data = open(sys.argv[1], "rb").read()
port = int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
pos, sent = 24, {"datagrams": 0, "samples": 0, "counter_samples": 0}
while pos + 16 <= len(data):
    caplen = struct.unpack_from("<I", data, pos + 8)[0]
    d = data[pos + 16 + 14 + 28:pos + 16 + caplen]  # Ethernet, IPv4, UDP
    pos += 16 + caplen
    assert struct.unpack_from(">II", d, 0) == (5, 1)  # sFlow v5, IPv4 agent
    at = 28
    for _ in range(struct.unpack_from(">I", d, 24)[0]):
        kind, length = struct.unpack_from(">II", d, at)
        at += 8 + length
        sent["samples" if kind in (1, 3) else "counter_samples"] += 1
    s.sendto(d, ("127.0.0.1", port))
    sent["datagrams"] += 1
    if sent["datagrams"] % 50 == 0:
        time.sleep(0.005)
print(json.dumps(sent))
PY
echo "sent: $(cat "$work/sent.json")"

ok=0
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$HTTP/api/v1/ingest" >"$work/ingest.json" || true
  if $py - "$work/ingest.json" "$work/sent.json" <<'PY'
import json, sys
ing = json.load(open(sys.argv[1])); sent = json.load(open(sys.argv[2]))
src = [s for s in ing["sources"] if s["kind"] == "sflow-udp"]
sys.exit(0 if src and src[0]["counters"].get("sflow_flow_samples", 0) >= sent["samples"]
         and src[0]["records"] > 0 else 1)
PY
  then ok=1; break; fi
  sleep 0.2
done
echo "ingest: $(cat "$work/ingest.json")"
[ "$ok" = 1 ] || { cat "$work/serve.log"; echo "FAIL sflow source did not reach the samples sent"; exit 1; }
$py - "$work/ingest.json" "$work/sent.json" "$UDP" <<'PY'
import json, sys
ing = json.load(open(sys.argv[1])); sent = json.load(open(sys.argv[2])); port = int(sys.argv[3])
s = [s for s in ing["sources"] if s["kind"] == "sflow-udp"][0]
c = s["counters"]
fails = []
if s["name"] != f"sflow:127.0.0.1:{port}": fails.append("name %r" % s["name"])
if s["datagrams"] != sent["datagrams"]: fails.append("datagrams %d != %d" % (s["datagrams"], sent["datagrams"]))
if c.get("sflow_datagrams") != sent["datagrams"]: fails.append("sflow_datagrams %s" % c.get("sflow_datagrams"))
if c.get("sflow_flow_samples") != sent["samples"]: fails.append("sflow_flow_samples %s != %d" % (c.get("sflow_flow_samples"), sent["samples"]))
if sent["counter_samples"] == 0: fails.append("the export has no counter samples")
if c.get("sflow_counter_samples") != sent["counter_samples"]: fails.append("sflow_counter_samples %s != %d" % (c.get("sflow_counter_samples"), sent["counter_samples"]))
if s["bad"] != 0: fails.append("bad %d" % s["bad"])
if s["dropped"]["queue_full"] or s["socket_drops"] or s["dropped"]["implausible_time"]:
    fails.append("dropped %r socket %d" % (s["dropped"], s["socket_drops"]))
if fails:
    print("FAIL " + "; ".join(fails)); sys.exit(1)
print("OK %s: %d datagrams, %d flow samples -> %d records, %d counter samples" % (s["name"], s["datagrams"], sent["samples"], s["records"], sent["counter_samples"]))
PY
curl -sf "http://127.0.0.1:$HTTP/metrics" | grep -E "^llmprism_datagrams_received_total\{source=\"sflow:127.0.0.1:$UDP\"\}" \
  || { echo "FAIL /metrics lacks the sflow source"; exit 1; }

kill -TERM "$SERVE_PID"
for _ in $(seq 100); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$SERVE_PID" 2>/dev/null; then cat "$work/serve.log"; echo "FAIL serve did not stop on SIGTERM"; exit 1; fi
rc=0; wait "$SERVE_PID" || rc=$?
pids=()
grep -q "llmprism serve: stopped" "$work/serve.log" || { cat "$work/serve.log"; echo "FAIL no clean stop"; exit 1; }
[ "$rc" = 0 ] || { cat "$work/serve.log"; echo "FAIL serve exit $rc"; exit 1; }
echo PASS
