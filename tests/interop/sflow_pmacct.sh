#!/usr/bin/env bash
# sFlow v5 from a real agent, checked against the reference collector: pmacct's pmacctd reads a
# small simulated RoCE capture (llmprism simulate --emit pcap) and its sfprobe plugin exports 1-in-10
# sampled packet headers to a loopback port, where a recorder keeps the datagrams as a capture.
# The datagrams are then sent to sfacctd (pmacct's collector: print plugin, not renormalised) and
# to our UDP collector, and the capture is read by our capture path. Every sample must agree:
# per (source, destination, ports, protocol, sampling rate) the number of samples and their bytes
# as sfacctd counts them (frame lengths), every sample's IP length as decoded from its header
# consistent with its frame length; our records (file and UDP) carry the rate and account for every
# sample; no datagram or sample is bad or lost.
# Usage: sflow_pmacct.sh LLMPRISM INGEST_DUMP WORK_DIR
set -euo pipefail
llmprism=$1
dump=$2
dir=$3
rm -rf "$dir"
mkdir -p "$dir"
for tool in pmacctd sfacctd; do
  command -v $tool >/dev/null || { echo "FAIL: $tool missing (run scripts/setup.sh)" >&2; exit 1; }
done
py=/usr/bin/python3

"$llmprism" simulate --scenario pcap-tiny --emit pcap --duration 0.3 --out "$dir/sim" > /dev/null

# Recorder: binds a free loopback port (written to its port file), keeps every datagram as a
# capture frame (Ethernet/IPv4/UDP to that port), stops 2 s after the last one or after 60 s.
$py - "$dir/agent.port" "$dir/sflow.pcap" <<'PY' &
import socket, struct, sys, time
port_file, out_path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
open(port_file + ".tmp", "w").write(f"{port}\n")
import os; os.rename(port_file + ".tmp", port_file)
out = open(out_path, "wb")
out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
start, last, n = time.time(), None, 0
s.settimeout(0.2)
while time.time() - start < 60 and (last is None or time.time() - last < 2):
    try:
        data, (addr, sport) = s.recvfrom(65535)
    except socket.timeout:
        continue
    last, n = time.time(), n + 1
    udp = struct.pack(">HHHH", sport, port, 8 + len(data), 0) + data
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(addr), socket.inet_aton("127.0.0.1")) + udp
    frame = b"\0" * 12 + b"\x08\x00" + ip
    out.write(struct.pack("<IIII", int(last), int(last % 1 * 1e6), len(frame), len(frame)) + frame)
out.close()
print(f"recorder: {n} datagrams", file=sys.stderr)
PY
rec_pid=$!
for _ in $(seq 100); do [[ -s "$dir/agent.port" ]] && break; sleep 0.05; done
[[ -s "$dir/agent.port" ]] || { echo "FAIL: recorder did not start" >&2; exit 1; }
printf '%s\n' "daemonize: false" "pcap_savefile: $dir/sim/flows.pcap" "plugins: sfprobe" \
  "sfprobe_receiver: 127.0.0.1:$(cat "$dir/agent.port")" "sampling_rate: 10" \
  "sfprobe_agentip: 10.200.0.1" > "$dir/pmacctd.conf"
# pmacctd exits 1 at the end of the file ("no more plugins active"): the export is complete.
timeout 60 pmacctd -f "$dir/pmacctd.conf" > "$dir/pmacctd.log" 2>&1 || true
wait $rec_pid

# Reference: sfacctd on a free port; ours: the sFlow UDP collector (its own free port).
sf_port=$($py -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '%s\n' "daemonize: false" "sfacctd_ip: 127.0.0.1" "sfacctd_port: $sf_port" \
  "plugins: print" "aggregate: src_host, dst_host, src_port, dst_port, proto, sampling_rate" \
  "print_output: csv" "print_output_file: $dir/sfacctd.csv" "print_refresh_time: 3600" \
  "sfacctd_renormalize: false" > "$dir/sfacctd.conf"
sfacctd -f "$dir/sfacctd.conf" > "$dir/sfacctd.log" 2>&1 &
sf_pid=$!
"$dump" listen-sflow "$dir/ours.port" 1500 60000 > "$dir/udp.csv" 2> "$dir/udp.stats" &
ours_pid=$!
for _ in $(seq 100); do [[ -s "$dir/ours.port" ]] && break; sleep 0.05; done
sleep 1  # sfacctd binds
$py - "$dir/sflow.pcap" "$sf_port" "$(cat "$dir/ours.port")" <<'PY'
import socket, struct, sys, time
data = open(sys.argv[1], "rb").read()
ports = [int(p) for p in sys.argv[2:]]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
pos, n = 24, 0
while pos + 16 <= len(data):
    caplen = struct.unpack_from("<I", data, pos + 8)[0]
    payload = data[pos + 16 + 14 + 28:pos + 16 + caplen]
    pos += 16 + caplen
    for p in ports:
        s.sendto(payload, ("127.0.0.1", p))
    n += 1
    if n % 10 == 0:
        # ~2,000 datagrams / s: sfacctd's socket holds ~150 of them (the system's default receive
        # buffer), and on a loaded 2-core machine it once lost 8 while paced at 10,000 / s.
        time.sleep(0.005)
print(f"replay: {n} datagrams", file=sys.stderr)
PY
wait $ours_pid
sleep 1
kill -INT $sf_pid
wait $sf_pid || true

"$dump" sflow-samples "$dir/sflow.pcap" > "$dir/samples.csv" 2> "$dir/samples.stats"
"$dump" pcap "$dir/sflow.pcap" > "$dir/file.csv" 2> "$dir/file.stats"

$py - "$dir" <<'PY'
import collections, csv, sys
d = sys.argv[1]
fail = []
ref = {}
for row in csv.DictReader(open(f"{d}/sfacctd.csv")):
    proto = {"udp": 17, "tcp": 6}.get(row["PROTOCOL"], row["PROTOCOL"])
    key = (row["SRC_IP"], row["DST_IP"], int(row["SRC_PORT"]), int(row["DST_PORT"]), int(proto),
           int(row["SAMPLING_RATE"]))
    p, b = ref.get(key, (0, 0))
    ref[key] = (p + int(row["PACKETS"]), b + int(row["BYTES"]))
ours = collections.defaultdict(lambda: [0, 0])
agents, qps = set(), set()
for line in open(f"{d}/samples.csv"):
    if line.startswith("src,"):  # the (empty) flow CSV's header
        continue
    agent, src, dst, sp, dp, proto, qp, rate, ip_bytes, frame = line.strip().split(",")
    key = (src, dst, int(sp), int(dp), int(proto), int(rate))
    ours[key][0] += 1
    # sfacctd counts the agent's frame length (Ethernet header and FCS included); ours is the
    # IP length decoded from the header bytes, which must be that less 14 + 4 for every sample.
    ours[key][1] += int(frame)
    if int(ip_bytes) != int(frame) - 18:
        fail.append(f"{key}: IP length {ip_bytes} decoded, frame length {frame}")
    agents.add(agent)
ours = {k: tuple(v) for k, v in ours.items()}
samples = sum(v[0] for v in ours.values())
ref_samples = sum(v[0] for v in ref.values())
print(f"sflow_pmacct: {samples} samples in {len(ours)} flows (sfacctd: {ref_samples} in {len(ref)}), "
      f"agents {sorted(agents)}")
if samples < 100:
    fail.append(f"only {samples} samples: the export did not work")
if agents != {"10.200.0.1"}:
    fail.append(f"agent addresses {agents}")
for k in sorted(set(ref) | set(ours)):
    if ref.get(k) != ours.get(k):
        fail.append(f"{k}: sfacctd {ref.get(k)} ours {ours.get(k)}")
def stats(name):
    out = {}
    for line in open(f"{d}/{name}.stats"):
        f = line.split()
        if len(f) == 3 and f[0] == "stat":
            out[f[1]] = int(f[2])
    return out
for name in ("samples", "file", "udp"):
    st = stats(name)
    for bad in ("sflow_bad_datagram", "sflow_bad_sample", "sflow_samples_lost",
                "sflow_samples_dropped", "sflow_datagrams_lost", "sflow_sample_no_header",
                "sflow_header_unsupported", "sflow_collector_bad_datagram",
                "collector_datagrams_dropped"):
        if st.get(bad, 0):
            fail.append(f"{name}: {bad} = {st[bad]}")
    if st.get("sflow_flow_samples") != samples:
        fail.append(f"{name}: sflow_flow_samples {st.get('sflow_flow_samples')} != {samples}")
# Records (capture path and UDP collector): every sample accounted for, each with rate 10.
per_flow = collections.Counter((k[0], k[1], k[2], k[3]) for k in ours for _ in range(ours[k][0]))
for name in ("file", "udp"):
    got = collections.Counter()
    rates = set()
    for row in csv.DictReader(open(f"{d}/{name}.csv")):
        got[(row["src"], row["dst"], int(row["src_port"]), int(row["dst_port"]))] += int(row["packets"])
        rates.add(int(row["sampling_rate"]))
    if rates != {10}:
        fail.append(f"{name} records: sampling rates {rates}")
    if got != per_flow:
        fail.append(f"{name} records: samples per flow differ from the decoded samples")
    print(f"sflow_pmacct: {name}: {sum(1 for _ in open(f'{d}/{name}.csv')) - 1} records, "
          f"{sum(got.values())} samples")
for f in fail[:20]:
    print("FAIL:", f)
sys.exit(1 if fail else 0)
PY
