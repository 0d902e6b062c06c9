#!/usr/bin/env bash
# `llmprism serve --capture lo` end to end (live capture): serve captures the loopback
# interface with a BPF filter that only matches this test's traffic (UDP to the RoCEv2 port 4791
# from a free source port); a python sender (raw UDP sockets, BTH + RETH + ICRC built by hand)
# sends RC RDMA WRITE messages between 127.0.0.2 and 127.0.0.3 (FIRST/MIDDLE.../LAST and ONLY);
# /api/v1/ingest must show the source "capture:lo" with exactly one record per message, every
# packet captured once, and the records placed in windows; SIGTERM must stop serve cleanly (exit 0).
# Usage: serve_capture.sh LLMPRISM WORKDIR    (exit 77 = cannot capture here: no CAP_NET_RAW / lo)
set -euo pipefail
bin=$1 work=$2
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# A free UDP port on 127.0.0.2 and 127.0.0.3: the senders' source port, which the filter names.
port=$($py - <<'PY'
import socket
for _ in range(50):
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(("127.0.0.2", 0))
    p = a.getsockname()[1]
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        b.bind(("127.0.0.3", p)); print(p); break
    except OSError:
        pass
    finally:
        a.close(); b.close()
PY
)
filter="udp src port $port and udp dst port 4791"

# --roce-idle-us 2 s: the sender spaces a message's packets 2 ms apart, but on a loaded machine
# its sleeps overrun the default 10 ms idle timeout and one message came out as two records. The
# test is about assembling messages from a live capture, not about that timeout.
"$bin" serve --capture lo --capture-filter "$filter" --http 127.0.0.1:0 --window 10 --step 5 \
  --idle-flush 2 --roce-idle-us 2000000 --ready-file "$work/ready.json" 2>"$work/serve.log" &
SERVE_PID=$!
pids+=("$SERVE_PID")
for _ in $(seq 100); do
  [ -f "$work/ready.json" ] && break
  kill -0 "$SERVE_PID" 2>/dev/null || break
  sleep 0.1
done
if [ ! -f "$work/ready.json" ]; then
  cat "$work/serve.log"
  if grep -qiE "permission|not permitted|operation not supported|no such device" "$work/serve.log"; then
    echo "SKIP cannot capture on lo here"; exit 77
  fi
  echo "FAIL serve did not start"; exit 1
fi
HTTP=$($py -c "import json;print(json.load(open('$work/ready.json'))['http'])")

# Send: per direction, 3 WRITE messages of FIRST + 2 MIDDLE + LAST (4 x 1024 B) and 2 WRITE ONLY
# (512 B): 5 messages and 14 packets per direction, 10 messages / 28 packets / 26,624 B in all.
$py - "$port" >"$work/sent.json" <<'PY'
import json, socket, struct, sys, time
port = int(sys.argv[1])
def bth(opcode, qp, psn):
    # opcode, SE|M|pad|tver, P_Key, reserved, dest QP (24), A|reserved, PSN (24)
    return struct.pack("!BBHI I", opcode, 0, 0xFFFF, qp & 0xFFFFFF, psn & 0xFFFFFF)
def reth(length):
    return struct.pack("!QII", 0x1000, 0x1234, length)
icrc = b"\0" * 4
sent = {"messages": 0, "packets": 0, "bytes": 0}
for src, dst, qp in (("127.0.0.2", "127.0.0.3", 0x11), ("127.0.0.3", "127.0.0.2", 0x22)):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, port))
    psn = 0
    def send(payload):
        s.sendto(payload, (dst, 4791))
        sent["packets"] += 1
        time.sleep(0.002)
    for m in range(3):
        n = 4
        send(bth(0x06, qp, psn) + reth(1024 * n) + b"\xab" * 1024 + icrc); psn += 1
        for _ in range(n - 2):
            send(bth(0x07, qp, psn) + b"\xab" * 1024 + icrc); psn += 1
        send(bth(0x08, qp, psn) + b"\xab" * 1024 + icrc); psn += 1
        sent["messages"] += 1; sent["bytes"] += 1024 * n
    for m in range(2):
        send(bth(0x0A, qp, psn) + reth(512) + b"\xcd" * 512 + icrc); psn += 1
        sent["messages"] += 1; sent["bytes"] += 512
    s.close()
print(json.dumps(sent))
PY
echo "sent: $(cat "$work/sent.json")"

# Poll /api/v1/ingest until the capture source shows every message (bounded: 10 s).
ok=0
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$HTTP/api/v1/ingest" >"$work/ingest.json" || true
  if $py - "$work/ingest.json" "$work/sent.json" <<'PY'
import json, sys
ing = json.load(open(sys.argv[1])); sent = json.load(open(sys.argv[2]))
src = [s for s in ing["sources"] if s["name"] == "capture:lo"]
sys.exit(0 if src and src[0]["records"] >= sent["messages"] and src[0]["accepted"] >= sent["messages"] else 1)
PY
  then ok=1; break; fi
  sleep 0.2
done
echo "ingest: $(cat "$work/ingest.json")"
[ "$ok" = 1 ] || { cat "$work/serve.log"; echo "FAIL capture source did not reach the expected records"; exit 1; }
$py - "$work/ingest.json" "$work/sent.json" <<'PY'
import json, sys
ing = json.load(open(sys.argv[1])); sent = json.load(open(sys.argv[2]))
s = [s for s in ing["sources"] if s["name"] == "capture:lo"][0]
c = s["counters"]
fails = []
if s["kind"] != "capture": fails.append("kind %r" % s["kind"])
if s["records"] != sent["messages"]: fails.append("records %d != messages %d" % (s["records"], sent["messages"]))
if s["packets"] != sent["packets"]: fails.append("packets %d != sent %d" % (s["packets"], sent["packets"]))
if c.get("pcap_packets", 0) != sent["packets"]: fails.append("pcap_packets %s" % c.get("pcap_packets"))
if s["bad"] != 0: fails.append("bad %d" % s["bad"])
for k in ("roce_message_incomplete", "roce_message_headless", "roce_bad_length"):
    if c.get(k, 0): fails.append("%s = %d" % (k, c[k]))
if s["dropped"]["queue_full"] or s["kernel_drops"]: fails.append("drops %r kernel %d" % (s["dropped"], s["kernel_drops"]))
if fails:
    print("FAIL " + "; ".join(fails)); sys.exit(1)
print("OK capture:lo: %d messages -> %d records, %d packets, filter %r" % (sent["messages"], s["records"], s["packets"], s["filter"]))
PY
curl -sf "http://127.0.0.1:$HTTP/metrics" | grep -E '^llmprism_(capture_packets_total|records_ingested_total)\{source="capture:lo"\}' \
  || { echo "FAIL /metrics lacks the capture source"; exit 1; }

# Clean stop: SIGTERM -> pcap_breakloop, drain, exit 0 (bounded: 10 s).
kill -TERM "$SERVE_PID"
for _ in $(seq 100); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$SERVE_PID" 2>/dev/null; then cat "$work/serve.log"; echo "FAIL serve did not stop on SIGTERM"; exit 1; fi
rc=0; wait "$SERVE_PID" || rc=$?
pids=()
grep -q "llmprism serve: stopped" "$work/serve.log" || { cat "$work/serve.log"; echo "FAIL no clean stop"; exit 1; }
[ "$rc" = 0 ] || { cat "$work/serve.log"; echo "FAIL serve exit $rc"; exit 1; }
echo "OK SIGTERM: clean stop"
echo PASS
