#!/usr/bin/env bash
# `llmprism serve --alertmanager` end to end with a real Alertmanager (Debian's
# prometheus-alertmanager, started here on a free loopback port: null receiver, no clustering):
#  1. the `faults` scenario shortened to 75 s (its straggler GPU 10.0.210.6 of the 512-GPU job
#     10.0.192.0/18 slows down from 15 s to 45 s) is replayed over UDP into serve (--window 20
#     --step 5) at about five times real time; while it plays, Alertmanager's GET /api/v2/alerts
#     must show the straggler as an alert llmprism_straggler_gpu with the labels job (serve's job
#     id), kind, severity and gpu (naming 10.0.210.6), and the finding's text as its summary;
#  2. the scenario goes on 30 s past the fault: once the windows no longer report it, serve posts
#     it resolved, and it must leave Alertmanager's active alerts well before the endsAt it was
#     posted with while firing (so it was resolved by serve, not expired);
#  3. a second --alertmanager URL where nothing listens: its failures are counted on /metrics
#     (llmprism_alertmanager_posts_total{outcome="failed"}) and logged with the URL, and they
#     neither stop analysis nor delivery to the first.
# Usage: serve_alertmanager.sh LLMPRISM WORKDIR   (exit 77 = prometheus-alertmanager missing)
set -euo pipefail
bin=$1 work=$2
am_bin=$(command -v prometheus-alertmanager || command -v alertmanager || true)
[ -n "$am_bin" ] || { echo "prometheus-alertmanager missing: run scripts/setup.sh" >&2; exit 77; }
py=/usr/bin/python3
. "$(dirname "$0")/checks.sh"
. "$(dirname "$0")/serve_ready.sh"
mkdir -p "$work"
rm -rf "$work/run" && mkdir -p "$work/run"
run=$work/run
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

if [ ! -f "$work/faults75/flows.ipfix" ]; then
  "$bin" simulate --scenario faults --seed 1 --duration 75 --out "$work/faults75" >/dev/null
fi

free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
am_port=$(free_port)
dead_port=$(free_port)  # nothing listens there
cat >"$run/alertmanager.yml" <<'YML'
route:
  receiver: "null"
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: "null"
YML
"$am_bin" --config.file="$run/alertmanager.yml" --storage.path="$run/am-data" \
  --cluster.listen-address= --web.listen-address="127.0.0.1:$am_port" >"$run/alertmanager.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$am_port/-/ready" >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$am_port/-/ready" >/dev/null \
  || { echo "FAIL alertmanager did not start"; tail -5 "$run/alertmanager.log"; exit 1; }

"$bin" serve --ipfix-udp 127.0.0.1:0 --http 127.0.0.1:0 --window 20 --step 5 --idle-flush 3 \
  --reorder 2 --topology "$work/faults75/topology.csv" --ready-file "$run/ready.json" \
  --alertmanager "http://127.0.0.1:$am_port,http://127.0.0.1:$dead_port" 2>"$run/serve.log" &
SERVE_PID=$!
pids+=("$SERVE_PID")
wait_serve_ready "$run/ready.json" "$run/serve.log"
HTTP=$SERVE_HTTP UDP=$SERVE_UDP
api() { curl -sf "http://127.0.0.1:$HTTP$1"; }

# The straggler alerts as Alertmanager holds them (active ones only): the finding names the
# injected GPU among its TP group's (label gpu, comma-separated).
am_alerts() {
  curl -sfG "http://127.0.0.1:$am_port/api/v2/alerts" \
    --data-urlencode 'filter=alertname="llmprism_straggler_gpu"' \
    --data-urlencode 'filter=gpu=~"(.*,)?10\\.0\\.210\\.6(,.*)?"'
}

"$bin" replay "$work/faults75/flows.ipfix" --to "127.0.0.1:$UDP" --cidr 10.0.192.0/18 \
  --rate 100000 >"$run/replay.log" &
replay_pid=$!
pids+=("$replay_pid")

# 1. Poll while the scenario plays (bounded: 90 s) until the straggler is firing.
firing=""
for _ in $(seq 450); do
  a=$(am_alerts || true)
  if [ -n "$a" ] && [ "$a" != "[]" ]; then firing=$a; break; fi
  sleep 0.2
done
echo "$firing" >"$run/firing.json"
check "$([ -n "$firing" ] && echo ok)" "Alertmanager shows llmprism_straggler_gpu for 10.0.210.6 while the fault plays"
if [ -z "$firing" ]; then
  echo "Alertmanager holds:"
  curl -sf "http://127.0.0.1:$am_port/api/v2/alerts" | $py -c '
import json, sys
for a in json.load(sys.stdin): print("  ", a["labels"], a["status"]["state"], a["endsAt"])'
  exit 1
fi

wait "$replay_pid"
# Wait (bounded, 60 s: then the checks below tell) until serve has analysed the whole scenario:
# the idle flush has analysed the tail, or, failing that sign, no window came for 4 s.
$py "$(dirname "$0")/serve_settled.py" "$HTTP" --quiet-s 4 --timeout 60 || true
api /api/v1/jobs >"$run/jobs.json"
api "/api/v1/findings?kind=straggler_gpu" >"$run/findings.json"

$py - "$run" <<'PY' || fails=$((fails + 1))
import json, sys
run = sys.argv[1]
alerts = json.load(open(f"{run}/firing.json"))
jobs = json.load(open(f"{run}/jobs.json"))["jobs"]
findings = [f for f in json.load(open(f"{run}/findings.json"))["findings"] if "10.0.210.6" in f["gpus"]]
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok
a = alerts[0]
lab = a["labels"]
check(len(alerts) == 1, f"one alert for the straggler: {len(alerts)}")
check(len(jobs) == 1 and lab.get("job") == jobs[0]["id"], f"label job={lab.get('job')} is serve's job id {[j['id'] for j in jobs]}")
check(lab.get("kind") == "straggler_gpu" and lab.get("severity") in ("warning", "critical"),
      f"labels kind={lab.get('kind')} severity={lab.get('severity')}")
check(a["status"]["state"] == "active", f"status.state {a['status']['state']}")
# The finding may have grown since (more steps of evidence): it is the same finding by id, and
# the summary is its text then (the job and the straggler's host).
ids = {str(f["id"]) for f in findings}
summary = a["annotations"].get("summary", "")
check(a["annotations"].get("finding_id") in ids, f"finding_id {a['annotations'].get('finding_id')} is a straggler_gpu finding naming 10.0.210.6 ({sorted(ids)})")
check(summary.startswith(lab.get("job", "?") + ":") and "host00210" in summary, f"summary is the finding's text: {summary!r}")
check("cause gpu" in a["annotations"].get("description", ""), f"description has the evidence: {a['annotations'].get('description')!r}")
check(a["startsAt"].startswith("2023-11-14T22:13"), f"startsAt is when the slowdown began in the records: {a['startsAt']}")
open(f"{run}/ends_at.txt", "w").write(a["endsAt"])
sys.exit(1 if fails else 0)
PY

# 2. Resolved: gone from the active alerts, before the endsAt it was last posted with.
gone=""
for _ in $(seq 150); do
  a=$(am_alerts || true)
  if [ "$a" = "[]" ]; then gone=$(date -u +%s); break; fi
  sleep 0.2
done
ends_at=$(date -u -d "$(cat "$run/ends_at.txt")" +%s)
check "$([ -n "$gone" ] && [ "$gone" -lt "$ends_at" ] && echo ok)" \
  "straggler alert resolved at $(date -u -d "@${gone:-0}" +%T), before its firing endsAt $(date -u -d "@$ends_at" +%T)"
api /metrics >"$run/metrics.txt"
metric() { grep -F "$1" "$run/metrics.txt" | awk '{print $2}'; }
resolved=$(metric "llmprism_alertmanager_alerts_total{url=\"http://127.0.0.1:$am_port\",state=\"resolved\"}")
ok_posts=$(metric "llmprism_alertmanager_posts_total{url=\"http://127.0.0.1:$am_port\",outcome=\"ok\"}")
failed=$(metric "llmprism_alertmanager_posts_total{url=\"http://127.0.0.1:$dead_port\",outcome=\"failed\"}")
check "$([ "${resolved:-0}" -ge 1 ] && echo ok)" "/metrics: $resolved resolved alerts and $ok_posts POSTs delivered to the live Alertmanager"
# 3. The unreachable one.
check "$([ "${failed:-0}" -ge 1 ] && echo ok)" "/metrics: $failed POSTs failed to the unreachable Alertmanager"
check "$(grep -q "alertmanager http://127.0.0.1:$dead_port: POST /api/v2/alerts failed" "$run/serve.log" && echo ok)" \
  "the failure is logged with the URL: $(grep -m1 "127.0.0.1:$dead_port: POST" "$run/serve.log" | cut -c1-160)"
n=$(api /api/v1/health | $py -c 'import json,sys; print(json.load(sys.stdin)["windows_analysed"])')
check "$([ "$n" -ge 10 ] && echo ok)" "analysis went on: $n windows analysed"

kill -TERM "$SERVE_PID"
wait "$SERVE_PID" && check ok "SIGTERM: exit 0" || check fail "serve exit code after SIGTERM"
[ "$fails" = 0 ] || { echo "serve_alertmanager: $fails check(s) failed"; exit 1; }
echo "serve_alertmanager: all checks passed"
