#!/usr/bin/env bash
# Fuzzes each ingest decoder with libFuzzer (clang, ASan + UBSan) for a fixed budget. CI runs it
# for a few seconds per target (CTest fuzz_decoders); longer runs by hand.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET=60] [JOBS=1] [OUT_DIR=build-fuzz]
# Targets (src/ingest/**/*_fuzzer.cc): packet_fuzzer (decoder chain + flow builder),
# export_decoder_fuzzer (IPFIX / NetFlow v9), sflow_decoder_fuzzer (sFlow v5 + decoder chain +
# flow builder). Seeds come from the committed captures, from well-formed export messages and
# from the committed sFlow datagrams (tests/golden/ingest/sflow/*.seed); crashes land in build-fuzz/<target>.work/ (crash-*) and fail the run.
# The decoders keep to C++20 without core/status.h (std::expected), which clang 14 cannot compile
# against libstdc++ 12; that is why the Status-returning readers are not fuzzed here (their
# framing is covered by the unit tests' corruption loops).
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-60}
jobs=${2:-1}
out=${3:-build-fuzz}
# libFuzzer reads -max_total_time=0 as "no limit": a budget of 0 would fuzz until killed.
if ! [[ $budget =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: SECONDS_PER_TARGET must be a whole number of seconds >= 1, got '$budget'" >&2
  exit 2
fi
if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: JOBS must be a whole number >= 1, got '$jobs'" >&2
  exit 2
fi
mkdir -p "$out"
CXX=${CXX_FUZZ:-clang++}
# 77: skipped (CTest's SKIP_RETURN_CODE) on a machine without clang; scripts/setup.sh installs it.
if ! command -v "$CXX" >/dev/null; then
  echo "fuzz: $CXX missing (scripts/setup.sh installs clang)" >&2
  exit 77
fi
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -Isrc)
common=(src/core/ip_addr.cc)
packet_sources=(src/ingest/packet/packet_fuzzer.cc src/ingest/packet/decoders.cc
  src/ingest/packet/dispatch.cc src/ingest/pcap/packet_flow_builder.cc src/ingest/pcap/psn_span.cc)
export_sources=(src/ingest/ipfix/export_decoder_fuzzer.cc
  src/ingest/ipfix/export_decoder.cc src/ingest/ipfix/data_record.cc
  src/ingest/ipfix/ipfix_template.cc src/ingest/ipfix/template_cache.cc
  src/ingest/ipfix/sequence_tracker.cc src/ingest/ipfix/decode_plan.cc)
sflow_sources=(src/ingest/sflow/sflow_decoder_fuzzer.cc
  src/ingest/sflow/sflow_decoder.cc src/ingest/sflow/sflow_format.cc
  src/ingest/sflow/loss_tracker.cc src/ingest/packet/decoders.cc src/ingest/packet/dispatch.cc
  src/ingest/pcap/packet_flow_builder.cc src/ingest/pcap/psn_span.cc)

# Each source is compiled once (the packet decoders are in two fuzzers), as many at a time as
# there are cores: the build is most of this script's time in CI.
obj() { echo "$out/obj/${1//\//_}.o"; }
mkdir -p "$out/obj"
printf '%s\n' "${common[@]}" "${packet_sources[@]}" "${export_sources[@]}" "${sflow_sources[@]}" |
  sort -u | while read -r src; do printf '%s\0%s\0' "$src" "$(obj "$src")"; done |
  xargs -0 -n 2 -P "$(nproc)" bash -c '"${@:1:$#-2}" -c "${@: -2:1}" -o "${@: -1}"' _ \
    "$CXX" "${flags[@]}" ||
  { echo "fuzz: compiling the targets failed" >&2; exit 1; }
link() {  # link NAME SOURCES...
  local name=$1 objs=() src
  shift
  for src in "$@" "${common[@]}"; do objs+=("$(obj "$src")"); done
  "$CXX" "${flags[@]}" "${objs[@]}" -lfmt -o "$out/$name"
}
link packet_fuzzer "${packet_sources[@]}"
link export_decoder_fuzzer "${export_sources[@]}"
link sflow_decoder_fuzzer "${sflow_sources[@]}"

# Seeds: every frame of the committed captures in the packet fuzzer's framing, and a NetFlow v9
# and an IPFIX message with templates, options (sampling) and data in the export fuzzer's.
python3 - "$out" <<'PY'
import glob, os, struct, sys
out = sys.argv[1]
pk = os.path.join(out, "packet_fuzzer.seeds"); os.makedirs(pk, exist_ok=True)
for path in sorted(glob.glob("tests/golden/ingest/scapy/*.pcap")):
    data = open(path, "rb").read()
    pos, frames = 24, []
    while pos + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, pos + 8)[0]
        frames.append(data[pos + 16:pos + 16 + caplen]); pos += 16 + caplen
    blob = b"\x00" + b"".join(struct.pack(">HB", len(f), 10) + f for f in frames)
    open(os.path.join(pk, os.path.basename(path) + ".seed"), "wb").write(blob)
ex = os.path.join(out, "export_decoder_fuzzer.seeds"); os.makedirs(ex, exist_ok=True)
def fs(sid, body): return struct.pack(">HH", sid, 4 + len(body)) + body
tmpl = struct.pack(">HH", 300, 6) + b"".join(struct.pack(">HH", i, l) for i, l in
        [(8, 4), (12, 4), (1, 4), (22, 4), (21, 4), (48, 1)])
otmpl = struct.pack(">HHH", 400, 4, 8) + struct.pack(">HHHHHH", 1, 4, 48, 1, 50, 4)
opt = struct.pack(">IBI", 0, 5, 100) + b"\0\0\0"
rec = struct.pack(">IIIIIB", 0x0a000001, 0x0a000002, 1500, 9000, 9500, 5) + b"\0\0\0"
sets = fs(0, tmpl) + fs(1, otmpl) + fs(400, opt) + fs(300, rec)
v9 = struct.pack(">HHIIII", 9, 4, 10000, 1700000000, 1, 7) + sets
itmpl = struct.pack(">HH", 256, 5) + b"".join(struct.pack(">HH", i, l) for i, l in
        [(8, 4), (12, 4), (1, 8), (152, 8), (153, 8)]) + struct.pack(">HHI", 0x8002, 0xFFFF, 32473)
irec = struct.pack(">IIQQQ", 1, 2, 3, 1700000000000, 1700000000001) + b"\x03abc"
body = fs(2, itmpl) + fs(256, irec)
ipfix = struct.pack(">HHIII", 10, 16 + len(body), 1700000000, 0, 1) + body
for name, msgs in (("v9", [v9, v9]), ("ipfix", [ipfix, ipfix[:20]]), ("mixed", [ipfix, v9])):
    blob = b"".join(struct.pack(">HB", len(m), i % 2 | 2) + m for i, m in enumerate(msgs))
    open(os.path.join(ex, name + ".seed"), "wb").write(blob)
PY
mkdir -p "$out/sflow_decoder_fuzzer.seeds"
cp tests/golden/ingest/sflow/*.seed "$out/sflow_decoder_fuzzer.seeds/"

status=0
for t in packet_fuzzer export_decoder_fuzzer sflow_decoder_fuzzer; do
  mkdir -p "$out/$t.corpus" "$out/$t.work"
  echo "fuzz: $t for ${budget}s"
  if ! (cd "$out/$t.work" && "../$t" -max_total_time="$budget" -rss_limit_mb=2048 -timeout=10 \
        -max_len=70000 -jobs="$jobs" -workers="$jobs" -print_final_stats=1 \
        "../$t.corpus" "../$t.seeds" > "../$t.log" 2>&1); then
    echo "fuzz: $t FAILED, see $out/$t.log and $out/$t.work/crash-*" >&2
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs" "$out/$t.log" \
    | sed "s/^/fuzz: $t: /" || true
done
exit $status
