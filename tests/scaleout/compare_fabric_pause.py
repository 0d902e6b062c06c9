"""The checks of fabric_pause.sh: two shard analysers, shard 1's jobs paused for more than a
window, and the fabric stage against one serve on the same records; and a fabric stage told of a
third shard that never publishes.

Usage: compare_fabric_pause.py WORK"""
import sys

import compare_shards as cs
import compare_state as c


def main():
    work = sys.argv[1]
    ref = c.load(f"{work}/ref.json")
    shards = [c.load(f"{work}/S{s}.json") for s in (0, 1)]
    fabric = c.load(f"{work}/F.json")
    fabric3 = c.load(f"{work}/F3.json")
    c.check_reference(ref, "degraded_switch")
    for s, state in enumerate(shards):
        c.check(c.lost(state) == 0, f"shard {s}: no record lost ({state['ingest']['records_lost']})")
        c.check(state["ingest"]["stream"]["lag_messages"] == 0, f"shard {s}: lag 0 at the end")

    published = [s["ingest"]["stream"]["fabric"] for s in shards]
    fs = fabric["ingest"]["stream"]
    c.check(published[0]["published_empty"] == 0 and published[1]["published_empty"] >= 2 and
            all(p["given_up"] == 0 and p["empty_windows_unlisted"] == 0 for p in published),
            f"shard 1 published an empty contribution for each window of its pause "
            f"({published[1]['published_empty']} of {published[1]['published']}), shard 0 none "
            f"({published[0]['published']}); none given up")
    c.check(fs["contributions_empty"] == published[1]["published_empty"] and
            fs["contributions_received"] == sum(p["published"] for p in published),
            f"the fabric stage took every contribution once ({fs['contributions_received']}, "
            f"{fs['contributions_empty']} empty)")
    c.check(fs["windows_judged"] == published[0]["published"] and
            fs["windows_judged_incomplete"] == 0 and fs["windows_pending"] == 0 and
            fs["contributions_bad"] == 0,
            f"the fabric stage judged every window whole ({fs['windows_judged']} windows, "
            f"{fs['windows_judged_incomplete']} incomplete, none pending, none bad)")
    losses = [f for f in fabric["findings"] if f["kind"] == "telemetry_loss"]
    c.check(not losses, f"no telemetry_loss finding from the fabric stage ({len(losses)})")

    cs.check_fabric_findings(ref, fabric)
    ref_rows = sorted(cs.finding_rows(ref))

    ref_jobs = cs.jobs_by_id(ref)
    both = {i: job for state in shards for i, job in cs.jobs_by_id(state).items()}
    c.check(both == ref_jobs, f"the shards' jobs together are the reference's {len(ref_jobs)} "
            f"(GPUs, layout, windows seen, step series): the paused jobs' windows on the grid")
    for i in sorted(set(both) | set(ref_jobs)):
        if both.get(i) != ref_jobs.get(i):
            print(f"     job {i} differs: windows {both.get(i, [None] * 3)[2]} on the shard, "
                  f"{ref_jobs.get(i, [None] * 3)[2]} in the reference")
    ref_job_rows = [r for r in ref_rows if not cs.fabric_kind(r)]
    shard_job_rows = sorted(r for state in shards for r in cs.finding_rows(state)
                            if not cs.fabric_kind(r))
    c.check(shard_job_rows == ref_job_rows,
            f"the shards' findings about jobs: the reference's {len(ref_job_rows)} "
            f"({len(shard_job_rows)})")
    for r in sorted(set(ref_job_rows) ^ set(shard_job_rows)):
        print("     differs:", "reference" if r in ref_job_rows else "shards", r)

    # A shard that never publishes is missing from every window, and the paused one from none.
    f3 = fabric3["ingest"]["stream"]
    losses3 = [f for f in fabric3["findings"] if f["kind"] == "telemetry_loss"]
    c.check(f3["windows_judged"] == fs["windows_judged"] and
            f3["windows_judged_incomplete"] == f3["windows_judged"] and losses3 and
            all("shard(s) 2 of 3" in f["summary"] for f in losses3),
            f"told of 3 shards, the fabric stage judged all {f3['windows_judged']} windows "
            f"without shard 2 ({f3['windows_judged_incomplete']} incomplete, "
            f"{len(losses3)} telemetry_loss finding(s), each naming shard 2 alone)")
    sys.exit(1 if c.fails else 0)


if __name__ == "__main__":
    main()
