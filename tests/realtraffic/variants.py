#!/usr/bin/env python3
"""The real-traffic corpus variants: jobs, parallelism, emulated GPU times, faults and hosts.

One place for the configuration that make_corpus.sh (through `variants.py plan VARIANT`),
train.py (each rank reads its job here) and build_truth.py share. Every GPU rank runs in its own
network namespace ("host") with one IP; a variant may add a storage namespace. IPs are
10.77.0.<11 + host index>; the switch is one Linux bridge named BRIDGE.

Usage: variants.py list | plan VARIANT
"""
import sys

BRIDGE = "rtbr0"
SUBNET_PREFIX = "10.77.0."
FIRST_HOST_OCTET = 11
MASTER_PORT = 29500  # + job index: every job's TCPStore rendezvous port on its rank 0
STORAGE_PORT = 29900  # storage_server.py on the storage namespace


def job(name, dp=1, pp=1, tp=1, schedule="none", microbatches=1, mode="allreduce", p2p="separate",
        layers=4, hidden=1024, seq=128, batch=1, vocab=512, fwd_ms=25.0, bwd_ms=50.0, opt_ms=10.0,
        steps=60, bucket_mb=1.0, straggler=None, storage=False):
    """One training job. Times are emulated GPU kernel times in ms per layer and micro-batch.

    The tensors have realistic sizes but the real math is cheap (up to 8 ranks share 2 cores, and
    this torch runs matrix products on the reference BLAS): a micro-batch is `batch` sequences of
    `seq` tokens, its activation batch x seq x hidden floats (512 KiB at batch 1, 1 MiB at
    batch 2); a layer is diagonal, y = gelu(x * w + b) with one weight and one bias per position
    and feature (seq x hidden each: 1 MiB of parameters per layer, element-wise work only); stage
    0 starts with a vocab x hidden token embedding (2 MiB at the defaults) whose dense gradient
    joins the first stage's data-parallel bytes, as an LLM's embedding does.

    mode: allreduce (gradients all-reduced after the backward), ddp (DistributedDataParallel,
    buckets of bucket_mb overlapped with the backward), zero (ring reduce-scatter of gradients,
    shard update, all-gather of parameters overlapped with the next forward).
    schedule: 1f1b or gpipe with pp > 1, none without a pipeline.
    p2p: separate (isend / irecv of each activation and gradient on its own) or batched (1F1B as
    Megatron-LM does it: dist.batch_isend_irecv sends the activation forward and receives the
    gradient backward in one operation, and the reverse, so a stage boundary's activations and
    gradients cross at the same moments).
    straggler: (rank, first_step, last_step, factor): that rank's GPU time x factor in steps
    first_step..last_step inclusive.
    """
    return dict(name=name, dp=dp, pp=pp, tp=tp, schedule=schedule, microbatches=microbatches,
                mode=mode, p2p=p2p, layers=layers, hidden=hidden, seq=seq, batch=batch,
                vocab=vocab, fwd_ms=fwd_ms, bwd_ms=bwd_ms, opt_ms=opt_ms, steps=steps,
                bucket_mb=bucket_mb, straggler=straggler, storage=storage)


# Pipeline jobs: `layers` per stage, times per layer and micro-batch.
#
# The data-parallel-only jobs (dp, dp8, ddp, zero, straggler-dp) have steps of about 2 s, as an
# LLM's last seconds: GPU times 6x (dp8 7x) those of their first version, the same tensors. Their
# truth step ends with the emulated optimizer, which the rank launches when the all-reduce returns
# to the process, i.e. after the host's wake-up delay (ms, tens of ms at worst on the loaded
# capture machine), which a GPU stream does not have (it queues the optimizer behind the
# all-reduce kernel). In 0.35-s steps that delay alone was 1-3% of a step; it does not grow with
# the step. 40 steps (50 for straggler-dp) keep each variant under two minutes.
VARIANTS = {
    "dp": dict(jobs=[job("job0", dp=4, layers=4, batch=2, fwd_ms=150, bwd_ms=300, opt_ms=60,
                         steps=40)]),
    "dp8": dict(jobs=[job("job0", dp=8, layers=2, batch=2, vocab=256, fwd_ms=280, bwd_ms=560,
                          opt_ms=70, steps=40)]),
    "pp-1f1b": dict(jobs=[job("job0", dp=2, pp=3, schedule="1f1b", microbatches=4, layers=2,
                              fwd_ms=10, bwd_ms=20, steps=60)]),
    "pp-batched": dict(jobs=[job("job0", dp=2, pp=3, schedule="1f1b", microbatches=6, layers=2,
                                 p2p="batched", fwd_ms=8, bwd_ms=16, steps=60)]),
    "pp-deep": dict(jobs=[job("job0", dp=2, pp=4, schedule="1f1b", microbatches=8, layers=1,
                              fwd_ms=12, bwd_ms=24, steps=45)]),
    "pp-gpipe": dict(jobs=[job("job0", dp=2, pp=2, schedule="gpipe", microbatches=4, layers=2,
                               fwd_ms=12, bwd_ms=24, steps=60)]),
    # GPU times 5x those of its first version (~1.7-s steps), the same tensors.
    "tp": dict(jobs=[job("job0", dp=2, pp=2, tp=2, schedule="1f1b", microbatches=4, layers=1,
                         batch=2, fwd_ms=100, bwd_ms=200, opt_ms=50, steps=40)]),
    "ddp": dict(jobs=[job("job0", dp=4, mode="ddp", layers=4, batch=2, fwd_ms=132, bwd_ms=312,
                          opt_ms=60, steps=40)]),
    "zero": dict(jobs=[job("job0", dp=4, mode="zero", layers=4, batch=2, fwd_ms=150, bwd_ms=300,
                           opt_ms=60, steps=40)]),
    "two-jobs": dict(jobs=[job("job0", dp=2, pp=2, schedule="1f1b", microbatches=4, layers=2,
                               fwd_ms=12, bwd_ms=24, steps=60, storage=True),
                           job("job1", dp=2, layers=4, batch=2, fwd_ms=30, bwd_ms=60, steps=50,
                               storage=True)],
                     storage=True),
    "straggler": dict(jobs=[job("job0", dp=2, pp=2, schedule="1f1b", microbatches=4, layers=2,
                                fwd_ms=12, bwd_ms=24, steps=70,
                                straggler=(1, 25, 45, 1.5))]),
    "straggler-mild": dict(jobs=[job("job0", dp=2, pp=2, schedule="1f1b", microbatches=4,
                                     layers=2, fwd_ms=12, bwd_ms=24, steps=70,
                                     straggler=(1, 25, 45, 1.2))]),
    # Only data parallelism: the slow rank shows in no pipeline hand-off, only in when it joins
    # the all-reduce (the others wait for it).
    "straggler-dp": dict(jobs=[job("job0", dp=4, layers=2, batch=2, fwd_ms=300, bwd_ms=600,
                                   opt_ms=60, steps=50, straggler=(2, 17, 31, 1.5))]),
    # tc tbf on host 1's link (both directions) from step 25 to step 45 of job0's rank 0: host 1
    # is rank 1, stage 0, whose DP all-reduce with rank 0 carries the embedding gradient.
    "degraded-link": dict(jobs=[job("job0", dp=2, pp=2, schedule="1f1b", microbatches=4,
                                    layers=2, fwd_ms=12, bwd_ms=24, steps=70)],
                          link=dict(host=1, first_step=25, last_step=45, rate="500mbit",
                                    factor=None)),
}


def hosts_of(variant):
    """[(host name, ip, kind, job name or None, rank or None)] in host order."""
    v = VARIANTS[variant]
    out = []
    for j in v["jobs"]:
        for r in range(j["dp"] * j["pp"] * j["tp"]):
            k = len(out)
            out.append((f"host{k}", SUBNET_PREFIX + str(FIRST_HOST_OCTET + k), "gpu", j["name"], r))
    if v.get("storage"):
        k = len(out)
        out.append((f"storage{k}", SUBNET_PREFIX + str(FIRST_HOST_OCTET + k), "storage", None,
                    None))
    return out


def job_ips(variant, job_name):
    return [ip for (_, ip, kind, j, _) in hosts_of(variant) if j == job_name]


def storage_ip(variant):
    for (_, ip, kind, _, _) in hosts_of(variant):
        if kind == "storage":
            return ip
    return None


def job_index(variant, job_name):
    return [j["name"] for j in VARIANTS[variant]["jobs"]].index(job_name)


def job_config(variant, job_name):
    return VARIANTS[variant]["jobs"][job_index(variant, job_name)]


def coords(j, rank):
    """(stage, dp index, tp index) of a rank: tp fastest, then dp, then the pipeline stage."""
    tp_i = rank % j["tp"]
    dp_i = (rank // j["tp"]) % j["dp"]
    stage = rank // (j["tp"] * j["dp"])
    return stage, dp_i, tp_i


def pair_label(j, ra, rb):
    """The truth label of two ranks of one job: "dp" (same stage and TP index), "pp" (adjacent
    stages, same DP and TP index), "tp" (same stage and DP index), else None."""
    sa, da, ta = coords(j, ra)
    sb, db, tb = coords(j, rb)
    if sa == sb and ta == tb and da != db:
        return "dp"
    if abs(sa - sb) == 1 and da == db and ta == tb:
        return "pp"
    if sa == sb and da == db and ta != tb:
        return "tp"
    return None


def rank_of(j, stage, dp_i, tp_i):
    return stage * j["dp"] * j["tp"] + dp_i * j["tp"] + tp_i


def plan(variant):
    """Lines for make_corpus.sh: host NAME IP KIND / rank JOB RANK HOST / link ... / storage."""
    v = VARIANTS[variant]
    lines = []
    hosts = hosts_of(variant)
    for (name, ip, kind, _, _) in hosts:
        lines.append(f"host {name} {ip} {kind}")
    for (name, ip, kind, j, r) in hosts:
        if kind == "gpu":
            lines.append(f"rank {j} {r} {name}")
    if v.get("storage"):
        lines.append(f"storage {storage_ip(variant)}")
    if "link" in v:
        ln = v["link"]
        lines.append(f"link {hosts[ln['host']][0]} {ln['rate']} {ln['first_step']} "
                     f"{ln['last_step']}")
    return lines


def main(argv):
    if len(argv) == 2 and argv[1] == "list":
        print("\n".join(VARIANTS))
        return 0
    if len(argv) == 3 and argv[1] == "plan":
        if argv[2] not in VARIANTS:
            print(f"variants.py: unknown variant '{argv[2]}' (have: {', '.join(VARIANTS)})",
                  file=sys.stderr)
            return 2
        print("\n".join(plan(argv[2])))
        return 0
    print(__doc__.strip().splitlines()[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
