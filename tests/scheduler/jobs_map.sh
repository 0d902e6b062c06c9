#!/usr/bin/env bash
# --jobs-map end to end on the `uniform-dp` scenario (three jobs: job0 of 64 GPUs on hosts
# host00000-07, job1 and job2 of 32 GPUs on four hosts each), with a map file mixing squeue lines
# and CSV lines, written from the scenario's truth:
#   7001 alice llama-pretrain   squeue, job0's first six hosts as a Slurm host list
#   7002 bob   llama-eval       squeue, job0's last two hosts    -> job0 spans 7001 and 7002
#   7100 carol sweep            CSV, job1 by GPU address and job2 by a host list
#                                                                -> 7100 split into two jobs
#   two bad lines (too few fields; a reversed host range) and a pending squeue job
# `analyze --jobs-map` must name every job and every finding of a job with its scheduler job in
# the JSON report and the HTML page, raise scheduler_mismatch as a warning for job0 (naming 7001
# and 7002 and the 16 GPUs outside 7001) and as info for 7100 (naming both recognised jobs),
# count the bad lines (report input jobs_map_bad_line = 2) and describe them as FILE:LINE.
# The slow-steps scenario's straggler finding must carry its job's scheduler job. Then
# `serve --watch` with the first map: /api/v1/jobs and /api/v1/findings carry the scheduler
# jobs too.
# Usage: jobs_map.sh LLMPRISM WORKDIR
set -euo pipefail
bin=$1 work=$2
py=/usr/bin/python3
. "$(dirname "$0")/../service/checks.sh"
. "$(dirname "$0")/../service/serve_ready.sh"
rm -rf "$work" && mkdir -p "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

"$bin" simulate --scenario uniform-dp --seed 1 --out "$work/sim" >/dev/null

# The map, from the truth: which hosts and GPUs each simulated job has.
$py - "$work" <<'PY'
import csv, json, sys
work = sys.argv[1]
truth = json.load(open(f"{work}/sim/truth.json"))
host = {r["ip"]: r["host"] for r in csv.DictReader(open(f"{work}/sim/topology.csv"))}
jobs = {j["id"]: sorted(j["gpus"], key=lambda ip: tuple(int(x) for x in ip.split("."))) for j in truth["jobs"]}
hosts = {k: sorted({host[g] for g in v}) for k, v in jobs.items()}
assert [len(hosts[k]) for k in ("job0", "job1", "job2")] == [8, 4, 4], hosts
def slurm(names):  # host00003..host00005 -> host[00003-00005] (consecutive, as squeue writes)
    nums = [int(n[4:]) for n in names]
    assert nums == list(range(nums[0], nums[0] + len(nums))), names
    return f"host[{nums[0]:05d}-{nums[-1]:05d}]"
with open(f"{work}/map.txt", "w") as f:
    f.write("# scheduler jobs of the test cluster\n")
    f.write("JOBID|USER|NAME|NODELIST\n")
    f.write(f"7001|alice|llama-pretrain|{slurm(hosts['job0'][:6])}\n")
    f.write(f"7002|bob|llama-eval|{slurm(hosts['job0'][6:])}\n")
    f.write("7003|erin|queued|\n")
    f.write("9001|dave|broken|host[00003-00001]\n")
    f.write("host_or_ip,job_id,user,name\n")
    for ip in jobs["job1"]:
        f.write(f"{ip},7100,carol,sweep\n")
    f.write(f"{slurm(hosts['job2'])},7100,carol,sweep\n")
    f.write("host00099,7200\n")
json.dump({"hosts": hosts}, open(f"{work}/truth-hosts.json", "w"))
PY

rc=0
"$bin" analyze "$work/sim/flows.ipfix" --topology "$work/sim/topology.csv" \
  --jobs-map "$work/map.txt" --report "$work/report.json" --html "$work/report.html" \
  >"$work/analyze.out" 2>"$work/analyze.err" || rc=$?
grep -F -e "--jobs-map" "$work/analyze.err" || true
# Exit 1: input was skipped as bad (the two map lines), as for any bad input.
check "$([ "$rc" = 1 ] && grep -q "2 input records or rows were skipped as bad" "$work/analyze.err" && echo ok)" \
  "analyze exit $rc with the bad lines counted: $(grep -m1 'skipped as bad' "$work/analyze.err")"
[ -s "$work/report.json" ] || { cat "$work/analyze.err"; exit 1; }

check "$(grep -q "map.txt:6: bad NODELIST: range '00003-00001'" "$work/analyze.err" && echo ok)" \
  "bad NODELIST described as FILE:LINE: $(grep -m1 'map.txt:6' "$work/analyze.err" | cut -c1-140)"
check "$(grep -q "map.txt:$(grep -n '^host00099' "$work/map.txt" | cut -d: -f1): expected host_or_ip,job_id,user,name" "$work/analyze.err" && echo ok)" \
  "short CSV line described as FILE:LINE: $(grep -m1 'map.txt:.*expected host_or_ip' "$work/analyze.err" | cut -c1-140)"

$py - "$work" <<'PY' || fails=$((fails + 1))
import json, re, sys
work = sys.argv[1]
r = json.load(open(f"{work}/report.json"))
hosts = json.load(open(f"{work}/truth-hosts.json"))["hosts"]
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok
jobs = {j["id"]: j for j in r["jobs"]}
by_hosts = {tuple(sorted(j["hosts"])): j for j in r["jobs"]}
j0 = by_hosts.get(tuple(hosts["job0"]))
j1 = by_hosts.get(tuple(hosts["job1"]))
j2 = by_hosts.get(tuple(hosts["job2"]))
check(all((j0, j1, j2)), f"the three jobs recognised: {[(j['id'], len(j['gpus'])) for j in r['jobs']]}")
if not all((j0, j1, j2)):
    sys.exit(1)
sched = lambda x: (x.get("scheduler") or {})
check(sched(j0) == {"job_id": "7001", "user": "alice", "name": "llama-pretrain"}, f"{j0['id']} -> {sched(j0)}")
check(sched(j1) == {"job_id": "7100", "user": "carol", "name": "sweep"}, f"{j1['id']} (by GPU address) -> {sched(j1)}")
check(sched(j2) == {"job_id": "7100", "user": "carol", "name": "sweep"}, f"{j2['id']} (by host list) -> {sched(j2)}")
with_job = [f for f in r["findings"] if f.get("job")]
wrong = [f for f in with_job if sched(f) != sched(jobs[f["job"]])]
check(with_job and not wrong, f"{len(with_job)} findings of a job carry its scheduler job ({len(wrong)} do not)")
mm = [f for f in r["findings"] if f["kind"] == "scheduler_mismatch"]
span = [f for f in mm if f["severity"] == "warning"]
split = [f for f in mm if f["severity"] == "info"]
check(len(span) == 1 and span[0]["job"] == j0["id"] and len(span[0]["gpus"]) == 16
      and "7001" in span[0]["summary"] and "7002" in span[0]["summary"],
      f"span warning: {[(f['job'], len(f['gpus']), f['summary']) for f in span]}")
check(len(split) == 1 and sched(split[0])["job_id"] == "7100" and j1["id"] in split[0]["summary"]
      and j2["id"] in split[0]["summary"], f"split info: {[f['summary'] for f in split]}")
check(len(mm) == 2, f"{len(mm)} scheduler_mismatch findings in all")
check(r["input"].get("jobs_map_bad_line") == 2, f"input jobs_map_bad_line = {r['input'].get('jobs_map_bad_line')}")
html = open(f"{work}/report.html").read()
m = re.findall(r'"scheduler":\{"job_id":"(\d+)","name":"([^"]*)","user":"([^"]*)"\}', html)
check(("7001", "llama-pretrain", "alice") in m and ("7100", "sweep", "carol") in m,
      f"the HTML page's data names the scheduler jobs ({len(m)} mentions)")
check("schedulerNote" in html, "the HTML page renders them (schedulerNote)")
sys.exit(1 if fails else 0)
PY

# A diagnosis finding carries its job's scheduler job: the slow-steps scenario's straggler
# (one 64-GPU job on host00000-07, one straggler GPU from 18 s).
"$bin" simulate --scenario slow-steps --seed 1 --out "$work/slow" >/dev/null
printf '7300|zoe|finetune|host[00000-00007]\n' >"$work/slow-map.txt"
"$bin" analyze "$work/slow/flows.ipfix" --topology "$work/slow/topology.csv" \
  --jobs-map "$work/slow-map.txt" --report "$work/slow.json" >/dev/null 2>"$work/slow.err" \
  || { cat "$work/slow.err"; exit 1; }
check "$($py -c '
import json, sys
r = json.load(open(sys.argv[1]))
st = [f for f in r["findings"] if f["kind"] == "straggler_gpu"]
ok = st and all(f.get("scheduler") == {"job_id": "7300", "user": "zoe", "name": "finetune"} for f in st)
print("ok" if ok else "no")' "$work/slow.json")" "slow-steps: the straggler_gpu finding carries scheduler job 7300 (zoe, finetune)"

# serve with the same map: the API carries the scheduler jobs.
mkdir -p "$work/watch"
"$bin" serve --watch "$work/watch" --http 127.0.0.1:0 --window 30 --step 10 --idle-flush 2 \
  --topology "$work/sim/topology.csv" --jobs-map "$work/map.txt" --ready-file "$work/ready.json" \
  2>"$work/serve.log" &
pids+=($!)
wait_serve_ready "$work/ready.json" "$work/serve.log"
cp "$work/sim/flows.ipfix" "$work/watch/.flows.ipfix" && mv "$work/watch/.flows.ipfix" "$work/watch/flows.ipfix"
api() { curl -sf "http://127.0.0.1:$SERVE_HTTP$1"; }
for _ in $(seq 120); do
  n=$(api /api/v1/findings?kind=scheduler_mismatch | $py -c 'import json,sys; print(len(json.load(sys.stdin)["findings"]))')
  [ "$n" -ge 2 ] && break
  sleep 0.5
done
api /api/v1/jobs >"$work/serve-jobs.json"
api "/api/v1/findings?kind=scheduler_mismatch" >"$work/serve-mismatch.json"
$py - "$work" <<'PY' || fails=$((fails + 1))
import json, sys
work = sys.argv[1]
jobs = json.load(open(f"{work}/serve-jobs.json"))["jobs"]
mm = json.load(open(f"{work}/serve-mismatch.json"))["findings"]
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok
ids = sorted((j.get("scheduler") or {}).get("job_id", "-") for j in jobs)
check(ids == ["7001", "7100", "7100"], f"serve: /api/v1/jobs scheduler jobs {ids}")
sev = sorted(f["severity"] for f in mm)
check(sev == ["info", "warning"], f"serve: scheduler_mismatch findings {sev}")
check(all(f.get("scheduler", {}).get("job_id") in ("7001", "7100") for f in mm), "serve: they carry the scheduler job")
sys.exit(1 if fails else 0)
PY
grep -F -e "--jobs-map" "$work/serve.log"
[ "$fails" = 0 ] || { echo "jobs_map: $fails check(s) failed"; exit 1; }
echo "jobs_map: all checks passed"
