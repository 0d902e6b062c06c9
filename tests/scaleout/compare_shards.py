"""The checks of shards.sh: two shard analysers and the fabric stage against one serve on the
same records.

Jobs and findings are compared by their ids: a job's id is derived from its GPUs and a finding's
from what it is about and its first window (service/stable_ids.h), so the shard that analyses a
job gives it, and its findings, the reference's ids. The shards' answers must be the reference's
for everything but the fabric: every job (id, GPUs, layout, windows seen, step series) and every
finding of the other kinds. Switch and link findings (degraded_switch, congested_link,
degraded_link) come from medians over every job's records (the bandwidth rule): the shards keep
theirs out (--fabric-stage) and the fabric stage, judging the merged contributions of both
shards, must give the reference's, every field.

Usage: compare_shards.py WORK PART1_RECORDS TOTAL_RECORDS"""
import re
import sys

import compare_state as c


def jobs_by_id(state):
    return {i: (tuple(j["gpu_list"]), j["layout"], j["windows"], j["step_series"]["rows"])
            for i, j in state["jobs"].items()}


def finding_rows(state):
    return [(f["id"], f["kind"], f["severity"], f["job"], tuple(f["gpus"]), tuple(f["switches"]),
             f["start_ns"], f["end_ns"], f["first_window_end_ns"], f["last_window_end_ns"],
             f["windows"]) for f in state["findings"]]


FABRIC_KINDS = {"degraded_switch", "congested_link", "degraded_link"}


def fabric_kind(row):
    return row[1] in FABRIC_KINDS


def check_fabric_findings(ref, fabric):
    """The fabric stage's findings (all of them, a telemetry_loss included) against the
    reference's switch and link findings, every field."""
    ref_fabric = [r for r in sorted(finding_rows(ref)) if fabric_kind(r)]
    fabric_rows = sorted(finding_rows(fabric))
    c.check(len(ref_fabric) >= 1 and fabric_rows == ref_fabric,
            f"the fabric stage's findings: the reference's {len(ref_fabric)} switch and link "
            f"findings ({len(fabric_rows)}; id, kind, severity, job, GPUs, switches, times, "
            f"first and last window, windows)")
    for r in sorted(set(ref_fabric) ^ set(fabric_rows)):
        print("     only in", "reference:" if r in ref_fabric else "the fabric stage:", r)


def judged_after_snapshot(log_path, judged_in_snapshot):
    """The shards that contributed to each window the first fabric stage judged after its
    snapshot (its log's "fabric window ...: K of N shards" lines past the snapshot's count)."""
    contributed = [int(m.group(1)) for m in
                   (re.search(r"fabric window \d.*: (\d+) of \d+ shards", line)
                    for line in open(log_path)) if m]
    return contributed[judged_in_snapshot:]


def main():
    work, part1, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ref = c.load(f"{work}/ref.json")
    shards = [c.load(f"{work}/S{s}.json") for s in (0, 1)]
    fabric = c.load(f"{work}/F.json")
    before = c.load(f"{work}/F-before.json")["stream"]  # the fabric stage before its restart
    # Its snapshot is taken just before the kill -9, and a window it judges in between is in
    # neither its snapshot nor what the restarted stage reads again (it resumes after the
    # windows committed): its log, a line per committed window naming the shards that
    # contributed, counts them.
    late = judged_after_snapshot(f"{work}/fabric.log", before["windows_judged"])
    collector = c.load(f"{work}/collector.json")
    c.check_reference(ref, "job_started")
    c.check_collectors([collector], total)
    c.check(collector["stream"]["unrouted_records"] == part1,
            f"part 2 routed by the collector: only part 1's {part1} records went to the recogniser")
    for s, state in enumerate(shards):
        c.check(c.lost(state) == 0, f"shard {s}: no record lost ({state['ingest']['records_lost']})")
        c.check(state["ingest"]["stream"]["lag_messages"] == 0, f"shard {s}: lag 0 at the end")
        c.check(len(state["jobs"]) >= 1, f"shard {s}: analyses {len(state['jobs'])} job(s)")
    ref_jobs = jobs_by_id(ref)
    both = {}
    for state in shards:
        for i, job in jobs_by_id(state).items():
            c.check(i not in both, f"job {i} ({len(job[0])} GPUs) on one shard only")
            both[i] = job
    c.check(both == ref_jobs, f"the shards' jobs together are the reference's {len(ref_jobs)}, by "
            f"id ({', '.join(sorted(ref_jobs))}; GPUs, layout, windows seen, step series)")
    mapped = set()
    for line in open(f"{work}/recogniser.log"):
        if line.startswith("llmprism recognise: job "):
            mapped.add(line.split()[3].rstrip(":"))
    c.check(mapped == set(ref_jobs), f"the recogniser's map names the jobs by the analysers' ids "
            f"({', '.join(sorted(mapped))})")
    ids = [r[0] for state in shards for r in finding_rows(state)]
    c.check(len(ids) == len(set(ids)), f"the shards' {len(ids)} finding ids are distinct")
    ref_rows = sorted(finding_rows(ref))
    shard_rows = sorted(r for state in shards for r in finding_rows(state))
    ref_job_rows = [r for r in ref_rows if not fabric_kind(r)]
    shard_job_rows = [r for r in shard_rows if not fabric_kind(r)]
    c.check(shard_job_rows == ref_job_rows,
            f"the shards' findings: the reference's {len(ref_job_rows)} about jobs "
            f"({len(shard_job_rows)}), none about switches and links")
    for r in sorted(set(ref_job_rows) ^ set(shard_job_rows)):
        print("     differs:", "reference" if r in ref_job_rows else "shards", r)
    c.check(not any(fabric_kind(r) for r in shard_rows),
            "the shards keep their own switch and link findings out (--fabric-stage)")
    check_fabric_findings(ref, fabric)
    fs = fabric["ingest"]["stream"]
    judged = before["windows_judged"] + len(late) + fs["windows_judged"]
    received = before["contributions_received"] + sum(late) + fs["contributions_received"]
    c.check(before["windows_judged"] >= 2 and
            before["windows_judged_incomplete"] + fs["windows_judged_incomplete"] == 0 and
            before["contributions_bad"] + fs["contributions_bad"] == 0 and
            fs["windows_pending"] == 0,
            f"the fabric stage judged {judged} windows ({before['windows_judged']} before its "
            f"restart, {len(late)} after the snapshot before it) from {received} contributions "
            f"({before['contribution_bytes'] + fs['contribution_bytes']} bytes), none incomplete, "
            f"none bad, none pending")
    c.check(not fabric["jobs"], "the fabric stage tracks no jobs of its own")
    published = [s["ingest"]["stream"]["fabric"] for s in shards]
    c.check(published[0]["published_pieces"] == published[0]["published"] and
            published[1]["published_pieces"] > published[1]["published"] and
            received >= sum(p["published"] for p in published),
            f"contributions published whole by shard 0 ({published[0]['published']}) and in "
            f"pieces by shard 1 ({published[1]['published']} in {published[1]['published_pieces']}"
            f" messages), all taken ({received}: those of windows not judged before the restart "
            f"are read again)")
    sys.exit(1 if c.fails else 0)


if __name__ == "__main__":
    main()
