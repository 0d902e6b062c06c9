"""Checks shared by the scale-out tests of serve's roles (roles.sh, cluster.sh): the state of each
analyser (tests/scaleout/roles_harness.sh `state`) against the one-process reference's.

What must be equal: every finding (id, kind, severity, job id, GPUs, switches, start and end, the
first and last window that reported it, how many windows did) and every job by its id (layout,
windows it was seen in, GPUs, step series): ids are derived from what they name, so a replica,
a restarted analyser and the reference give the same ones. A window analysed twice or lost shows in the windows counts, the
findings' windows and the step series."""
import json

fails = 0


def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok


def load(path):
    with open(path) as f:
        return json.load(f)


def essence(state):
    findings = sorted((f["id"], f["kind"], f["severity"], f["job"], tuple(f["gpus"]),
                       tuple(f["switches"]), f["start_ns"], f["end_ns"], f["first_window_end_ns"],
                       f["last_window_end_ns"], f["windows"]) for f in state["findings"])
    jobs = {i: (j["layout"], j["windows"], j["step_series"]["rows"], j["gpus"])
            for i, j in state["jobs"].items()}
    return findings, jobs


def lost(state):
    return sum(state["ingest"]["records_lost"].values())


def check_reference(ref, *fault_kinds):
    findings, jobs = essence(ref)
    kinds = {f[1] for f in findings}
    check(len(jobs) >= 1 and all(k in kinds for k in fault_kinds),
          f"reference: {len(jobs)} job(s), {len(findings)} findings, "
          f"{', '.join(fault_kinds)} among them")
    check(lost(ref) == 0, "reference lost no record")


def check_collectors(collectors, records):
    published = sum(c["stream"]["published_records"] for c in collectors)
    held = sum(c["stream"]["held_records"] for c in collectors)
    errors = sum(c["stream"]["publish_errors"] for c in collectors)
    check(published == records and held == 0,
          f"{len(collectors)} collector(s) published {published} records of {records}, "
          f"{errors} failed publish attempts retried")


def check_analyser(name, state, ref, resumed_log=None, expect_skipped=True):
    findings, jobs = essence(state)
    ref_findings, ref_jobs = essence(ref)
    check(findings == ref_findings,
          f"analyser {name}: the reference's {len(ref_findings)} findings ({len(findings)})")
    check(jobs == ref_jobs, f"analyser {name}: the reference's jobs, windows and step series")
    check(lost(state) == 0, f"analyser {name}: no record lost ({state['ingest']['records_lost']})")
    check(state["ingest"]["stream"]["lag_messages"] == 0, f"analyser {name}: lag 0 at the end")
    if resumed_log is not None:
        with open(resumed_log) as f:
            log = f.read()
        check("s committed)" in log, f"analyser {name} resumed after its committed windows")
        skipped = state["ingest"]["stream"]["records_already_analysed"]
        check(skipped > 0 or not expect_skipped,
              f"analyser {name}: {skipped} records read again were skipped as already analysed")


def print_stream_figures(name, state):
    """What the analyser's reading went through: batches delivered again, readings set up again,
    records read again and skipped (figures, not checks: they depend on timing)."""
    s = state["ingest"]["stream"]
    print(f"     analyser {name}: {s['redelivered_messages']} batches redelivered, "
          f"{s['reconnects']} reconnects, {s['records_already_analysed']} records skipped "
          f"as already analysed")
