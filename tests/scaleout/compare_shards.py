"""The checks of shards.sh: two shard analysers together against one serve on the same records.

Jobs are compared by their GPUs (each analyser numbers its own jobs), findings by their job's
GPUs. Per-job answers must be equal: every job (layout, windows seen, step series) and every
finding about a job's GPUs that names no switch. Findings that name switches or links come from
medians over every job's records through them (the bandwidth rule): a shard sees only its jobs'
share, so those are listed where they differ, not required equal.

Usage: compare_shards.py WORK PART1_RECORDS TOTAL_RECORDS"""
import sys

import compare_state as c


def job_gpus(state):
    return {i: tuple(j["gpu_list"]) for i, j in state["jobs"].items()}


def jobs_by_gpus(state):
    return {tuple(j["gpu_list"]): (j["layout"], j["windows"], j["step_series"]["rows"])
            for j in state["jobs"].values()}


def finding_rows(state):
    gpus_of = job_gpus(state)
    rows = []
    for f in state["findings"]:
        rows.append((f["kind"], f["severity"], gpus_of.get(f["job"], f["job"]), tuple(f["gpus"]),
                     tuple(f["switches"]), f["start_ns"], f["end_ns"], f["first_window_end_ns"],
                     f["last_window_end_ns"], f["windows"]))
    return rows


def per_job(row):
    return row[2] != "" and not row[4]


def main():
    work, part1, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ref = c.load(f"{work}/ref.json")
    shards = [c.load(f"{work}/S{s}.json") for s in (0, 1)]
    collector = c.load(f"{work}/collector.json")
    c.check_reference(ref, "job_started")
    c.check_collectors([collector], total)
    c.check(collector["stream"]["unrouted_records"] == part1,
            f"part 2 routed by the collector: only part 1's {part1} records went to the recogniser")
    for s, state in enumerate(shards):
        c.check(c.lost(state) == 0, f"shard {s}: no record lost ({state['ingest']['records_lost']})")
        c.check(state["ingest"]["stream"]["lag_messages"] == 0, f"shard {s}: lag 0 at the end")
        c.check(len(state["jobs"]) >= 1, f"shard {s}: analyses {len(state['jobs'])} job(s)")
    ref_jobs = jobs_by_gpus(ref)
    both = {}
    for state in shards:
        for gpus, job in jobs_by_gpus(state).items():
            c.check(gpus not in both, f"job of {len(gpus)} GPUs from {gpus[0]} on one shard only")
            both[gpus] = job
    c.check(both == ref_jobs, f"the shards' jobs together are the reference's {len(ref_jobs)} "
            "(GPUs, layout, windows seen, step series)")
    ref_rows = sorted(finding_rows(ref))
    shard_rows = sorted(r for state in shards for r in finding_rows(state))
    ref_job_rows = [r for r in ref_rows if per_job(r)]
    shard_job_rows = [r for r in shard_rows if per_job(r)]
    c.check(shard_job_rows == ref_job_rows,
            f"per-job findings: the reference's {len(ref_job_rows)} ({len(shard_job_rows)})")
    for r in sorted(set(ref_job_rows) ^ set(shard_job_rows)):
        print("     differs:", "reference" if r in ref_job_rows else "shards", r[:2], r[3:])
    ref_fabric = [r for r in ref_rows if not per_job(r)]
    shard_fabric = [r for r in shard_rows if not per_job(r)]
    same = sorted(set(ref_fabric) & set(shard_fabric))
    print(f"info fabric findings (switches, links): reference {len(ref_fabric)}, shards "
          f"{len(shard_fabric)}, {len(same)} equal")
    for r in sorted(set(ref_fabric) ^ set(shard_fabric)):
        print("     only in", "reference:" if r in ref_fabric else "the shards:", r[:2], r[4:7])
    sys.exit(1 if c.fails else 0)


if __name__ == "__main__":
    main()
