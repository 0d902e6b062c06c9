#!/usr/bin/env bash
# Unusable inputs exit 2 with a message naming the file; a few bad rows among good ones exit 1.
# Usage: bad_input.sh LLMPRISM_BINARY WORK_DIR
set -uo pipefail
bin=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_exit CODE FILE_IN_MESSAGE ARGS...
expect_exit() {
  local want=$1 name=$2
  shift 2
  "$bin" "$@" > "$dir/out.txt" 2> "$dir/err.txt"
  local rc=$?
  [[ $rc == "$want" ]] || fail "$* exited $rc, want $want; stderr: $(cat "$dir/err.txt")"
  if [[ -n $name ]]; then
    grep -qF "$name" "$dir/err.txt" || fail "$*: stderr does not name $name: $(cat "$dir/err.txt")"
  fi
}

# A CSV whose header lacks required columns.
printf 'src,dst,when\n10.0.0.1,10.0.0.2,5\n' > "$dir/malformed.csv"
expect_exit 2 "$dir/malformed.csv" analyze "$dir/malformed.csv"

# A CSV with a good header but no usable row.
printf 'src,dst,start_ns,end_ns,bytes\nnot-an-ip,10.0.0.2,1,2,3\n' > "$dir/norows.csv"
expect_exit 2 "$dir/norows.csv" analyze "$dir/norows.csv"

# Garbage bytes.
head -c 4096 /dev/urandom | tr -d '\000-\001' > "$dir/garbage.bin"
printf '\x7fELF' | cat - "$dir/garbage.bin" > "$dir/garbage"
expect_exit 2 "$dir/garbage" analyze "$dir/garbage"
grep -q "unknown input format" "$dir/err.txt" || fail "garbage: no 'unknown input format'"

# Empty file, missing file, topology given as flows, bad arguments.
: > "$dir/empty.csv"
expect_exit 2 "$dir/empty.csv" analyze "$dir/empty.csv"
expect_exit 2 "$dir/missing.csv" analyze "$dir/missing.csv"
printf 'ip,host,gpu,leaf\n10.0.0.1,h0,0,leaf0\n' > "$dir/topo.csv"
expect_exit 2 "$dir/topo.csv" analyze "$dir/topo.csv"
expect_exit 2 "" analyze
expect_exit 2 "" analyze "$dir/topo.csv" --window -1
expect_exit 2 "" simulate --scenario no-such-scenario --out "$dir/sim"

# One bad row among good ones: analysis runs, the row is counted, exit 1.
{
  echo 'src,dst,start_ns,end_ns,bytes'
  for i in $(seq 0 49); do
    echo "10.0.0.1,10.0.1.1,$((1700000000000000000 + i * 1000000)),$((1700000000000000000 + i * 1000000 + 500)),1048576"
  done
  echo '10.0.0.1,10.0.1.1,oops,1,2'
} > "$dir/onebad.csv"
expect_exit 1 "" analyze "$dir/onebad.csv" --report "$dir/onebad.json"
grep -q "csv_bad_row" "$dir/out.txt" || fail "summary does not show csv_bad_row"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['input']['csv_bad_row']==1, d['input']" \
  "$dir/onebad.json" || fail "report input lacks csv_bad_row"
echo ok
